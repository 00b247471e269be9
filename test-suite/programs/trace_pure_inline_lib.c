/* See trace_pure_inline_main.c: the pure callee, and weigh's external definition (GMP's __GMP_FORCE_...). */
__attribute__((pure)) int weight(const int *v, int n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    s += v[i] > 2 ? v[i] : 1;
  return s;
}
int weigh(const int *v, int n) { return n > 0 ? weight(v, n) : 0; }
