/* Matrix multiply, the textbook i-j-k loop with an inner dot product, n x n doubles. */
#include <stdlib.h>
#include "kernels.h"

static void matmul(long n, const double *a, const double *b, double *c) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long k = 0; k < n; k++)
        s += a[i * n + k] * b[k * n + j];
      c[i * n + j] = s;
    }
}

uint64_t kernel_matmul(long n) {
  double *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b), *c = malloc(n * n * sizeof *c);
  if (!a || !b || !c)
    abort();
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      a[i * n + j] = (double)((i * 31 + j * 17) % 101) / 50.0 - 1.0;
      b[i * n + j] = (double)((i * 13 + j * 29) % 97) / 48.0 - 1.0;
    }
  matmul(n, a, b, c);
  uint64_t h = 0;
  for (long i = 0; i < n * n; i++)
    h = kernel_mix(h, kernel_bits(c[i]));
  free(a);
  free(b);
  free(c);
  return h;
}
