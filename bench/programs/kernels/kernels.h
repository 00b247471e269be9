/* Loop kernels of the pathprof benchmark (issue 18: the performance tail). Each takes one size and returns a
 * checksum that depends on all of its work, so no build can drop any of it and "same stdout as the baseline"
 * checks the result. No globals: bench/programs/kernels/mt.c runs them in several threads at once. */
#ifndef PATHPROF_BENCH_KERNELS_H
#define PATHPROF_BENCH_KERNELS_H
#include <stdint.h>

uint64_t kernel_daxpy(long reps);    /* daxpy + ddot on 2048 doubles, `reps` times */
uint64_t kernel_sieve(long reps);    /* sieve of Eratosthenes up to 2^17, `reps` times */
uint64_t kernel_matmul(long n);      /* n x n double matrix multiply, i-j-k with an inner dot product */
uint64_t kernel_heapsort(long n);    /* heapsort of n pseudo-random 64-bit integers */
uint64_t kernel_nestloop(long n);    /* six nested loops to n that only count (n^6) */
uint64_t kernel_bubble(long n);      /* bubble sort of n pseudo-random 32-bit integers */
uint64_t kernel_fib(long n);         /* tree-recursive Fibonacci */
uint64_t kernel_interp(long n);      /* a switch-dispatched bytecode interpreter running a loop n times */

/* A 64-bit mixing step for checksums (splitmix64's finaliser). */
static inline uint64_t kernel_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  return h;
}

/* The bits of a double, so a checksum sees every bit of a floating-point result. */
static inline uint64_t kernel_bits(double d) {
  union { double d; uint64_t u; } c = {d};
  return c.u;
}
/* The checksum of a sorted array `a` of `n` integers; a sort that left it unsorted ends the program (exit 1),
 * so a wrong sort can never pass the harness's same-output check. A macro: the sorts use different widths. */
#define KERNEL_SORTED_CHECKSUM(name, a, n, h)                                                                  \
  do {                                                                                                         \
    for (long i_ = 0; i_ < (n); i_++) {                                                                        \
      if (i_ > 0 && (a)[i_ - 1] > (a)[i_]) {                                                                   \
        fprintf(stderr, "%s: not sorted at %ld\n", (name), i_);                                                 \
        exit(1);                                                                                               \
      }                                                                                                        \
      (h) = kernel_mix((h), (a)[i_]);                                                                          \
    }                                                                                                          \
  } while (0)
#endif
