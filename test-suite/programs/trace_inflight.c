/* A detached thread is still going round spin()'s loop, which makes no decision and calls nothing, when main
 * returns and the process exits (QuickJS's workers, found by the corpus). Its trace ends inside the loop. */
#include <pthread.h>

static volatile int inside;
static volatile unsigned long iterations;

__attribute__((noinline)) static void spin(void) {
  inside = 1;
  for (;;)
    iterations++;
}

static void *worker(void *arg) {
  (void)arg;
  spin();
  return 0;
}

int main(void) {
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_create(&t, &a, worker, 0);
  while (!inside)
    ;
  return 0;
}
