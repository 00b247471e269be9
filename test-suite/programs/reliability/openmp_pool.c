/* An OpenMP program (LLVM's runtime, libomp): a parallel loop over 1000 iterations on 4 threads, then main
 * returns at once. libomp's workers spin for 200 ms after every parallel region (KMP_BLOCKTIME) before they
 * sleep, so they are running when the process ends, in libomp's code, with no instrumented activation left.
 * Counts: main 1, work 1000 (from the workers and the main thread: atomic counters), the outlined body 4.
 * Output: 426. */
#include <stdio.h>

__attribute__((noinline)) static long work(int i) {
  long s = 0;
  for (int k = 0; k < i % 7; k++)
    s += k & 1 ? k : -k;
  return s;
}

int main(void) {
  long total = 0;
#pragma omp parallel for reduction(+ : total) num_threads(4)
  for (int i = 0; i < 1000; i++)
    total += work(i);
  printf("%ld\n", total);
  return 0;
}
