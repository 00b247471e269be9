#include <stdio.h>
#include <stdlib.h>

#define DIFF(a, b) ((a) - (b))

static int scale = 3;

static int twice(int x) {
  return x * 2;
}

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
  printf("prod %d\n", prod);
  printf("i %d\n", i);
  printf("twice %d\n", twice(n) * scale);
  printf("diff %d\n", DIFF(prod, i));
  return 0;
}
