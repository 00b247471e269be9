/* Tree recursion: the naive Fibonacci, and Takeuchi's function (three-way recursion with a data-dependent
 * depth). */
#include "kernels.h"

static uint64_t fib(long n) {
  return n < 2 ? (uint64_t)n : fib(n - 1) + fib(n - 2);
}

static long tak(long x, long y, long z) {
  return y < x ? tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y)) : z;
}

uint64_t kernel_fib(long n) {
  uint64_t h = fib(n);
  for (long i = 0; i < n; i++)
    h = kernel_mix(h, (uint64_t)tak(i % 18, i % 12, i % 6));
  return h;
}
