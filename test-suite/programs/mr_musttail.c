/* Mutual tail recursion entered through a call (Melski-Reps modes): tail_a and tail_b end most activations
 * with `musttail` calls, so the activation that main's call entered is gone when the chain returns to main.
 * Entered through a call site, tail_a handed its path back before its tail call; the activations after it (a
 * root's return, tail_b's call of step) stored other values in the handoff slot, which main then read as
 * tail_a's, and counts came out wrong yet exact (after_chain: 24 entries of 200). A function that makes a
 * `musttail` call is now entered as a root only. Counts: for n = i % 17 (0..16 eleven times each, then 0..12),
 * the chain from tail_a(n) has n/2 + 1 activations of tail_a, (n + 1)/2 of tail_b and n/2 calls of step
 * (integer division): tail_a 940, tail_b 834, step 740, after_chain 200, main 1. */
#include <stdio.h>

static volatile long sink;

__attribute__((noinline)) static int step(int n) {
  if (n % 3 == 0)
    return 1;
  return 2;
}

__attribute__((noinline)) static int tail_a(int n, int acc);

__attribute__((noinline)) static int tail_b(int n, int acc) {
  if (n <= 0)
    return acc;
  acc += step(n);
  __attribute__((musttail)) return tail_a(n - 1, acc + 2);
}

__attribute__((noinline)) static int tail_a(int n, int acc) {
  if (n <= 0)
    return acc;
  __attribute__((musttail)) return tail_b(n - 1, acc + 1);
}

__attribute__((noinline)) static void after_chain(int n) {
  if (n > 5)
    sink += n;
  else
    sink -= n;
}

int main(void) {
  long s = 0;
  for (int i = 0; i < 200; i++) {
    s += tail_a(i % 17, 0);
    after_chain(i);
  }
  printf("%ld %ld\n", s, sink);
  return 0;
}
