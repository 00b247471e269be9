/* See trace_pure_main.c. */
__attribute__((pure)) int weight(const int *v, int n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    s += v[i] > 2 ? v[i] : 1;
  return s;
}
void bump(int *v, int n) {
  for (int i = 0; i < n; i++)
    if (v[i] % 2)
      v[i]++;
}
