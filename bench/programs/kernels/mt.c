/* The kernels in several threads at once: `mt THREADS ROUNDS`. Every thread runs the same kernels on its own
 * data, in the same order, ROUNDS times, so the threads execute the same code at about the same time and share
 * its counters (the cache lines of per-iteration counter updates bounce between cores). Prints each thread's
 * checksum (all equal) and the combined one. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "kernels.h"

/* One round per thread: about 0.05 s of single-threaded -O2 work on the benchmark machine. */
static const struct {
  uint64_t (*fn)(long);
  long size;
} ROUND[] = {
    {kernel_daxpy, 400}, {kernel_sieve, 12}, {kernel_matmul, 64}, {kernel_heapsort, 8000},
    {kernel_bubble, 540}, {kernel_fib, 22}, {kernel_interp, 50000},
};

struct job {
  long rounds;
  uint64_t checksum;
};

static void *worker(void *p) {
  struct job *j = p;
  uint64_t h = 0;
  for (long r = 0; r < j->rounds; r++)
    for (size_t k = 0; k < sizeof ROUND / sizeof ROUND[0]; k++)
      h = kernel_mix(h, ROUND[k].fn(ROUND[k].size));
  j->checksum = h;
  return NULL;
}

int main(int argc, char **argv) {
  long threads = argc == 3 ? strtol(argv[1], NULL, 10) : 0, rounds = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
  if (threads < 1 || threads > 64 || rounds < 1) {
    fprintf(stderr, "usage: %s THREADS(1-64) ROUNDS\n", argv[0]);
    return 2;
  }
  pthread_t tid[64];
  struct job jobs[64];
  for (long t = 0; t < threads; t++) {
    jobs[t].rounds = rounds;
    if (pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0) {
      fprintf(stderr, "mt: pthread_create failed\n");
      return 1;
    }
  }
  uint64_t h = 0;
  for (long t = 0; t < threads; t++) {
    pthread_join(tid[t], NULL);
    printf("thread %ld %016" PRIx64 "\n", t, jobs[t].checksum);
    h = kernel_mix(h, jobs[t].checksum);
  }
  printf("mt %ld %ld %016" PRIx64 "\n", threads, rounds, h);
  return 0;
}
