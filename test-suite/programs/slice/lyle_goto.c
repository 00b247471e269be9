#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int m = atoi(argv[1]);
  int n = atoi(argv[2]);
  int x = 1;
  int y;
  int i = 1;
  while (i < m) {
    if (i == n)
      goto L;
    i = i + 1;
  }
  printf("i %d\n", i);
L:
  y = x;
  printf("crit %d\n", y);
  return 0;
}
