#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 5;
  int debug = argc > 2;
  int scale = 1;
  if (argc > 3)
    scale = atoi(argv[3]);
  int a = 0;
  for (int i = 0; i < n; i++) {
    if (debug)
      a = a + i * 100;
    else
      a = a + i * scale;
    if (a > 1000)
      break;
  }
  printf("crit %d\n", a);
  return 0;
}
