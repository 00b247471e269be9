/* Trace mode: entries at direct call sites (announced, one bit) mixed with every other kind of entry —
 * indirect calls, callbacks from untraced code (qsort, and an untraced function that replaces a direct
 * callee), a direct callee replaced by a traced function of another module, a direct callee replaced by
 * untraced code that calls nothing or that longjmps, direct recursion, and an atexit handler (an entry at the
 * thread's top level). trace_direct_lib.c holds the strong definitions that replace this file's weak ones;
 * its untraced functions use `asm goto` (`callbr`, left uninstrumented). Deterministic. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

jmp_buf env;
static long acc;

int cb(int x) { /* traced; called back from untraced code */
  acc += x & 3 ? x : 2 * x;
  return x + 1;
}

/* Weak: replaced by trace_direct_lib.c's definitions (the direct calls below announce these). */
__attribute__((weak, noinline)) int leaf(int x) { return x; }
__attribute__((weak, noinline)) int hop(int x) { return x; }
__attribute__((weak, noinline)) void bail(int v) { (void)v; }

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int twice(int x) { return 2 * x + (x & 1); }

static int cmp(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static void bye(void) { printf("bye acc=%ld\n", acc); }

int main(int argc, char **argv) {
  (void)argv;
  int (*volatile indirect)(int) = argc > 5 ? cb : twice;
  atexit(bye);
  int a[24];
  for (int i = 0; i < 24; i++)
    a[i] = (i * 7 + 3) % 24;
  qsort(a, 24, sizeof a[0], cmp);
  long s = 0;
  for (int i = 0; i < 12; i++) {
    s += twice(i);       /* direct, announced */
    s += indirect(i);    /* indirect: a plain entry */
    s += leaf(i);        /* direct, but another module's traced function runs */
    s += hop(i);         /* direct, untraced code runs: callbacks into cb (even i) or none (odd i) */
    s += fib(i % 7);     /* direct recursion */
  }
  volatile int rounds = 0;
  if (setjmp(env) < 3) {
    rounds++;
    bail(rounds);        /* direct; untraced code longjmps back */
  }
  printf("s=%ld rounds=%d a0=%d\n", s, rounds, a[0]);
  return 0;
}
