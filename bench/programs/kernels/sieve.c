/* Sieve of Eratosthenes (the classic byte-array version) up to 2^17, repeated. */
#include <stdlib.h>
#include "kernels.h"

#define M (1 << 17)

static long sieve(unsigned char *flags) {
  long count = 0;
  for (long i = 0; i <= M; i++)
    flags[i] = 1;
  for (long i = 2; i <= M; i++) {
    if (flags[i]) {
      count++;
      for (long k = i + i; k <= M; k += i)
        flags[k] = 0;
    }
  }
  return count;
}

uint64_t kernel_sieve(long reps) {
  unsigned char *flags = malloc(M + 1);
  if (!flags)
    abort();
  uint64_t h = 0;
  for (long r = 0; r < reps; r++) {
    flags[(r * 7919) % (M + 1)] = 0; /* a different start each time: the sieve cannot be hoisted */
    h = kernel_mix(h, (uint64_t)sieve(flags));
  }
  free(flags);
  return h;
}
