/* Loops whose trace bits the writer defers to the loop's exit (a cycle through one test, no call, no other
 * decision), and loops it must not defer. Trip counts 0, 1, 31, 32, 33, 63, 64, 65 and 200 cover the one-put
 * path (fewer than 32 stays), the 32-bit chunks and a stream word filled mid-run. */
#include <stdio.h>

static volatile long sink;

static long count_up(long n) { /* deferred: for.cond is the test */
  long x = 0;
  for (long i = 0; i < n; i++)
    x += i;
  return x;
}

static long count_down(long n) { /* deferred: a do-while, its test at the bottom */
  long x = 0;
  do {
    x += n;
  } while (--n > 0);
  return x;
}

static long with_call(long n) { /* not deferred: a call in the body */
  long x = 0;
  for (long i = 0; i < n; i++) {
    sink = i;
    x += count_up(i & 3);
  }
  return x;
}

static long with_branch(long n) { /* not deferred: a second decision */
  long x = 0;
  for (long i = 0; i < n; i++)
    if (i & 1)
      x += i;
  return x;
}

int main(void) {
  static const long trips[] = {0, 1, 31, 32, 33, 63, 64, 65, 200};
  long total = 0;
  for (unsigned k = 0; k < sizeof trips / sizeof trips[0]; k++) /* deferred? no: the body has calls */
    total += count_up(trips[k]) + count_down(trips[k] + 1) + with_branch(trips[k]) + with_call(trips[k] % 7);
  printf("%ld\n", total);
  return 0;
}
