/* Six nested loops that only count (the shootout's "nestedloop"). clang -O2 folds the nest to n^6; an
 * instrumented build folds it only if its counters stay out of the loops. */
#include "kernels.h"

uint64_t kernel_nestloop(long n) {
  uint64_t x = 0;
  for (long a = 0; a < n; a++)
    for (long b = 0; b < n; b++)
      for (long c = 0; c < n; c++)
        for (long d = 0; d < n; d++)
          for (long e = 0; e < n; e++)
            for (long f = 0; f < n; f++)
              x++;
  return x;
}
