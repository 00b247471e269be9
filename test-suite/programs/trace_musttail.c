/* Tail calls (`musttail`): mutual tail recursion that never grows the stack, a threaded interpreter whose
 * handlers tail-call the next one through a table, a wrapper with no code of its own, and tail calls into
 * the C library — one that calls back into traced code (bsearch). Each caller's activation ends at its tail
 * call and the callee's takes its place at the caller's caller's call site.
 *
 * By hand (no arguments): is_even(1001) alternates down to is_odd(0): 501 activations of each; through the
 * pointer, is_even(10): 6 of is_even, 5 of is_odd. The interpreter runs INC DBL LOOP until acc >= 1000: acc
 * after each round 2, 6, 14, ..., 1022, so 9 rounds (op_inc, op_dbl, op_loop 9 activations each), op_halt
 * once, run_prog once. wrap (and twice) 3 times; say twice; find once, cmp_int at least once. */
#include <stdio.h>
#include <stdlib.h>

static int is_odd(unsigned n);

static int is_even(unsigned n) {
  if (n == 0)
    return 1;
  __attribute__((musttail)) return is_odd(n - 1);
}

static int is_odd(unsigned n) {
  if (n == 0)
    return 0;
  __attribute__((musttail)) return is_even(n - 1);
}

typedef long (*op_fn)(const unsigned char *prog, const unsigned char *pc, long acc);
enum { INC, DBL, LOOP, HALT };
static long op_inc(const unsigned char *prog, const unsigned char *pc, long acc);
static long op_dbl(const unsigned char *prog, const unsigned char *pc, long acc);
static long op_loop(const unsigned char *prog, const unsigned char *pc, long acc);
static long op_halt(const unsigned char *prog, const unsigned char *pc, long acc);
static op_fn const table[] = {op_inc, op_dbl, op_loop, op_halt};

static long op_inc(const unsigned char *prog, const unsigned char *pc, long acc) {
  __attribute__((musttail)) return table[*pc](prog, pc + 1, acc + 1);
}

static long op_dbl(const unsigned char *prog, const unsigned char *pc, long acc) {
  __attribute__((musttail)) return table[*pc](prog, pc + 1, acc * 2);
}

static long op_loop(const unsigned char *prog, const unsigned char *pc, long acc) {
  if (acc < 1000)
    pc = prog;
  __attribute__((musttail)) return table[*pc](prog, pc + 1, acc);
}

static long op_halt(const unsigned char *prog, const unsigned char *pc, long acc) {
  (void)prog;
  (void)pc;
  printf("halt at %ld\n", acc);
  return acc;
}

/* Exported: a direct call site announces it. */
long run_prog(const unsigned char *prog, const unsigned char *pc, long acc) {
  __attribute__((musttail)) return table[*pc](prog, pc + 1, acc);
}

int twice(int x) { return 2 * x; }

/* No code of its own but the tail call: no leaf that could be called implicitly. */
int wrap(int x) { __attribute__((musttail)) return twice(x); }

static int say(const char *s) { __attribute__((musttail)) return puts(s); }

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static void *find(const void *key, const void *base, size_t n, size_t size,
                  int (*cmp)(const void *, const void *)) {
  __attribute__((musttail)) return bsearch(key, base, n, size, cmp);
}

int main(void) {
  static const unsigned char prog[] = {INC, DBL, LOOP, HALT};
  int (*pe)(unsigned) = is_even;
  int sum = is_even(1001) + pe(10);
  long acc = run_prog(prog, prog, 0);
  for (int i = 0; i < 3; i++)
    sum += wrap(i);
  say("tail-called puts");
  say("again");
  static const int sorted[] = {1, 3, 5, 7, 9, 11, 13};
  int key = 9;
  const int *hit = find(&key, sorted, 7, sizeof sorted[0], cmp_int);
  printf("sum %d acc %ld found %td\n", sum, acc, hit ? hit - sorted : -1);
  return 0;
}
