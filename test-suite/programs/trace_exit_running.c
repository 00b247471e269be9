/* Trace mode: the process exits (or, with the argument "abort", dies of SIGABRT) while three other threads keep
 * filling their trace buffers (liburcu's fork test: children exit while their call_rcu threads run). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static volatile unsigned long sink;
static unsigned long __attribute__((noinline)) step(unsigned long x) { return (x & 1) ? 3 * x + 1 : x / 2; }
static void *spin(void *arg) {
  (void)arg;
  for (unsigned long i = 1;; i++) {
    unsigned long x = i;
    while (x != 1)
      x = step(x);
    sink += i;
  }
  return NULL;
}
int main(int argc, char **argv) {
  pthread_t t[3];
  for (int k = 0; k < 3; k++)
    pthread_create(&t[k], NULL, spin, NULL);
  for (volatile int i = 0; i < 20000; i++)
    sink += step(i);
  if (argc > 1 && strcmp(argv[1], "abort") == 0)
    abort();
  exit(0);
}
