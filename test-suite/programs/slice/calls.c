#include <stdio.h>
#include <stdlib.h>

int hits;
int misses;

static void count(int *where, int by) {
  *where = *where + by;
}

static int step(int x) {
  int t = x * 3;
  int u = x + 1;
  int junk = x * x;
  if (junk > 50)
    junk = 50;
  if (x % 2)
    count(&hits, 1);
  else
    count(&misses, 1);
  printf("crit %d %d\n", t, hits);
  return u;
}

int main(int argc, char **argv) {
  int x = atoi(argv[1]);
  int n = atoi(argv[2]);
  int unused = 0;
  for (int i = 0; i < n; i++) {
    x = step(x);
    unused = unused + x;
  }
  printf("unused %d misses %d\n", unused, misses);
  return 0;
}
