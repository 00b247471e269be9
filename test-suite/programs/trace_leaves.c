/* Trace mode: implicit calls. A direct call of a straight-line leaf (no branch, no call) writes no marker: the
   reader walks the leaf at the call site (see tests/trace.rs). */
#include <stdio.h>
#include <stdlib.h>

static int twice(int x) { return 2 * x; } /* static leaf: implicit at its direct call */

int scale(int x) { /* external leaf: implicit at its direct call, entered with its id through the pointer */
  int y = x * 3;
  return y + 1;
}

__attribute__((weak)) int hook(int x) { return x - 1; } /* weak: a link may replace it, so never implicit */

static int chain(int x) { /* three blocks in a line at -O0 */
  int y = x;
  goto a;
a:
  y += 1;
  goto b;
b:
  return y;
}

static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; } /* called by qsort */

int main(void) {
  int (*volatile fp)(int) = scale;
  int v[16];
  long s = 0;
  for (int i = 0; i < 16; i++) {
    s += twice(i) + scale(i) + hook(i) + chain(i);
    v[i] = (i * 7) % 16;
  }
  s += fp(5);
  qsort(v, 16, sizeof v[0], cmp);
  printf("%ld %d\n", s, v[3]);
  return 0;
}
