/* Trace mode: longjmp across two activations to a setjmp two calls deep, several times, with calls after the
 * setjmp call in its block and a recursive callee. */
#include <setjmp.h>
#include <stdio.h>
static jmp_buf env;
static int rec(int n, int jump) {
  if (n == 0) {
    if (jump)
      longjmp(env, jump);
    return 1;
  }
  return n + rec(n - 1, jump);
}
static int step(int i) { return rec(i % 4, i % 3 == 1 ? i : 0); }
static int body(int i) {
  volatile int r = 0;
  int j = setjmp(env);
  r += j + step(j ? 0 : i);
  return r;
}
int main(void) {
  int s = 0;
  for (int i = 0; i < 8; i++)
    s += body(i);
  printf("%d\n", s);
  return 0;
}
