/* Trace mode: longjmp out of a callee (not regenerable yet: the trace must say it is incomplete). */
#include <setjmp.h>
static jmp_buf env;
static void deep(int i) {
  if (i == 1)
    longjmp(env, 1);
}
int main(void) {
  volatile int n = 0;
  if (setjmp(env) == 0) {
    for (int i = 0; i < 3; i++) {
      deep(i);
      n++;
    }
  }
  return n == 1 ? 0 : 1;
}
