#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  int s = 0;
  int p = 1;
  for (int i = 1; i <= n; i++) {
    s = s + i; p = p * 2;
  }
  printf("crit %d %d\n", s, p);
  return 0;
}
