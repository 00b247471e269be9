/* A thread with the smallest stack POSIX allows (PTHREAD_STACK_MIN, 16 KiB) uses 2 KiB of it and calls exit():
 * the write at exit runs on that thread, and must not need more stack than the plain build's exit does. True
 * counts: main 1, worker 1, work 1 with 10 iterations; exit status 0 (exit(0) from the worker; main's return 3
 * is never reached). */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

__attribute__((noinline)) static void work(int n) {
  for (int i = 0; i < n; i++)
    sink += i;
}

static void *worker(void *arg) {
  char buf[2048];
  memset(buf, 1, sizeof buf);
  sink += buf[100];
  work(10);
  exit(0);
  return arg;
}

int main(void) {
  pthread_attr_t attr;
  pthread_t t;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN) != 0)
    return 2;
  if (pthread_create(&t, &attr, worker, 0) != 0)
    return 2;
  pthread_join(t, 0);
  return 3;
}
