#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int k = atoi(argv[1]);
  int a = 0;
  int b = 0;
  int other = 0;
  for (int r = 0; r < 3; r++) {
    switch ((k + r) % 5) {
    case 0:
      a = a + 1;
    case 1:
      b = b + 10;
      break;
    case 2:
      other = other + 1;
      break;
    case 3:
      a = a + 100;
      /* fall through */
    default:
      b = b + a;
    }
  }
  printf("a %d other %d\n", a, other);
  printf("crit %d\n", b);
  return 0;
}
