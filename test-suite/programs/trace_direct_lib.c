/* Strong definitions replacing trace_direct.c's weak ones: a traced `leaf`, and untraced `hop` and `bail`
 * (an `asm goto`, LLVM's `callbr`, which no mode instruments) that call back into traced code or longjmp. */
#include <setjmp.h>

int cb(int x);
extern jmp_buf env;

int leaf(int x) { return x > 5 ? x - 1 : x + 3; }

int hop(int x) {
  asm goto("" :::: odd); /* never jumps: it only keeps the function untraced */
  if (x & 1)
    goto odd;
  return cb(x) + cb(x + 1);
odd:
  return x;
}

void bail(int v) {
  asm goto("" :::: out);
  longjmp(env, v + 1);
out:
  longjmp(env, v + 2);
}
