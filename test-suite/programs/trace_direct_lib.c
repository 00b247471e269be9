/* Strong definitions replacing trace_direct.c's weak ones: a traced `leaf`, and untraced `hop` and `bail`
 * (computed gotos: `indirectbr` is left uninstrumented) that call back into traced code or longjmp. */
#include <setjmp.h>

int cb(int x);
extern jmp_buf env;

int leaf(int x) { return x > 5 ? x - 1 : x + 3; }

int hop(int x) {
  static void *const to[] = {&&even, &&odd};
  goto *to[x & 1];
even:
  return cb(x) + cb(x + 1);
odd:
  return x;
}

void bail(int v) {
  static void *const to[] = {&&a, &&b};
  goto *to[v & 1];
a:
  longjmp(env, v + 1);
b:
  longjmp(env, v + 1);
}
