#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = atoi(argv[1]), maxint = atoi(argv[2]);
  int sum = 0;
  int prod = 1;
  int i = 0;
  while (i < n) {
    i = i + 1;
    if (prod > maxint)
      break;
    sum = sum + i;
    prod = prod * i;
  }
  printf("sum %d\n", sum);
  printf("crit %d\n", prod);
  return 0;
}
