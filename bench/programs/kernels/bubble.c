/* Bubble sort (with the early exit when a pass swaps nothing) of n pseudo-random integers. */
#include <stdio.h>
#include <stdlib.h>
#include "kernels.h"

static void bubble(uint32_t *a, long n) {
  for (long top = n - 1; top > 0; top--) {
    int swapped = 0;
    for (long i = 0; i < top; i++) {
      if (a[i] > a[i + 1]) {
        uint32_t t = a[i];
        a[i] = a[i + 1];
        a[i + 1] = t;
        swapped = 1;
      }
    }
    if (!swapped)
      break;
  }
}

uint64_t kernel_bubble(long n) {
  uint32_t *a = malloc(n * sizeof *a);
  if (!a)
    abort();
  uint32_t x = 2463534242u;
  for (long i = 0; i < n; i++) { /* xorshift32 */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    a[i] = x;
  }
  bubble(a, n);
  uint64_t h = 0;
  KERNEL_SORTED_CHECKSUM("bubble", a, n, h);
  free(a);
  return h;
}
