/* Trace mode: calls to a function declared pure, defined (and traced) in another translation unit
 * (trace_pure_lib.c), between other calls: the callee's bits must survive the caller's code around the call. */
#include <stdio.h>
__attribute__((pure)) int weight(const int *v, int n);
void bump(int *v, int n);
static int twice(const int *v, int n) { return weight(v, n) + weight(v + 1, n - 1); }
int main(void) {
  int v[16];
  for (int i = 0; i < 16; i++)
    v[i] = i * 7 % 5;
  int s = 0;
  for (int r = 0; r < 4; r++) {
    s += twice(v, 16 - r);
    bump(v, 16);
  }
  printf("%d\n", s);
  return 0;
}
