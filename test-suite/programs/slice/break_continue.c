#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  int stop = atoi(argv[2]);
  int odd = 0;
  int sq = 0;
  for (int i = 0; i < n; i++) {
    if (i == stop)
      break;
    sq = sq + i * i;
    if (i % 2 == 0)
      continue;
    odd = odd + i;
  }
  printf("sq %d\n", sq);
  printf("crit %d\n", odd);
  return 0;
}
