/* Heapsort (sift-down, Floyd's build) of n pseudo-random 64-bit integers. */
#include <stdio.h>
#include <stdlib.h>
#include "kernels.h"

static void sift_down(uint64_t *a, long root, long end) {
  while (2 * root + 1 < end) {
    long child = 2 * root + 1;
    if (child + 1 < end && a[child] < a[child + 1])
      child++;
    if (a[root] >= a[child])
      return;
    uint64_t t = a[root];
    a[root] = a[child];
    a[child] = t;
    root = child;
  }
}

static void heapsort(uint64_t *a, long n) {
  for (long i = n / 2 - 1; i >= 0; i--)
    sift_down(a, i, n);
  for (long end = n - 1; end > 0; end--) {
    uint64_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(a, 0, end);
  }
}

uint64_t kernel_heapsort(long n) {
  uint64_t *a = malloc(n * sizeof *a);
  if (!a)
    abort();
  uint64_t x = 88172645463325252ull;
  for (long i = 0; i < n; i++) { /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    a[i] = x;
  }
  heapsort(a, n);
  uint64_t h = 0;
  KERNEL_SORTED_CHECKSUM("heapsort", a, n, h);
  free(a);
  return h;
}
