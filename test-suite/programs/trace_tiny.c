/* Trace mode: a sequence derived by hand (see tests/trace.rs). */
static int sq(int x) { return x * x; }
int main(void) {
  int s = 0;
  for (int i = 0; i < 3; i++)
    s += sq(i);
  return s - 5;
}
