/* Trace mode: two threads doing deterministic work. */
#include <pthread.h>
#include <stdio.h>
static long work(long n) {
  long s = 0;
  for (long i = 0; i < n; i++)
    s += (i % 3 == 0) ? i : 1;
  return s;
}
static void *run(void *arg) { return (void *)work((long)arg); }
int main(void) {
  pthread_t t[2];
  for (long i = 0; i < 2; i++)
    pthread_create(&t[i], 0, run, (void *)(1000 * (i + 1)));
  long total = 0;
  for (int i = 0; i < 2; i++) {
    void *r;
    pthread_join(t[i], &r);
    total += (long)r;
  }
  printf("%ld\n", total);
  return 0;
}
