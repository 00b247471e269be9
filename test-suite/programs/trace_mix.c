/* Trace mode: loops, recursion, a switch, libc calls and a callback (qsort), deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int calls;

static int cmp(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  calls++;
  return (x > y) - (x < y);
}

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int classify(int v) {
  switch (v % 5) {
  case 0: return 10;
  case 1:
  case 2: return 20;
  case 3: return 30;
  default: return 40;
  }
}

int main(int argc, char **argv) {
  int a[40];
  unsigned seed = 7;
  for (int i = 0; i < 40; i++) {
    seed = seed * 1103515245u + 12345u;
    a[i] = (int)((seed >> 16) % 1000);
  }
  qsort(a, 40, sizeof a[0], cmp);
  long sum = 0;
  for (int i = 0; i < 40; i++)
    sum += classify(a[i]);
  char buf[64];
  snprintf(buf, sizeof buf, "%ld", sum);
  int len = (int)strlen(buf);
  printf("sum=%s len=%d fib=%d calls>0=%d argc=%d\n", buf, len, fib(12), calls > 0, argc);
  return 0;
}
