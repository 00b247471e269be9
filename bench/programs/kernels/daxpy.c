/* Dense linear algebra on doubles: y += a*x, then x.y, over 2048 elements (32 KiB, cache-resident). */
#include <stdlib.h>
#include "kernels.h"

#define N 2048

static void daxpy(int n, double a, const double *restrict x, double *restrict y) {
  for (int i = 0; i < n; i++)
    y[i] += a * x[i];
}

static double ddot(int n, const double *x, const double *y) {
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i] * y[i];
  return s;
}

uint64_t kernel_daxpy(long reps) {
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  if (!x || !y)
    abort();
  for (int i = 0; i < N; i++) {
    x[i] = (double)((i * 7919) % 1000) / 1000.0 - 0.5;
    y[i] = (double)((i * 104729) % 1000) / 1000.0;
  }
  double dots = 0.0;
  for (long r = 0; r < reps; r++) {
    daxpy(N, (r & 1) ? 1e-3 : -0.9e-3, x, y); /* alternating signs keep y bounded */
    dots += ddot(N, x, y);
  }
  uint64_t h = kernel_bits(dots);
  for (int i = 0; i < N; i++)
    h = kernel_mix(h, kernel_bits(y[i]));
  free(x);
  free(y);
  return h;
}
