#include <stdio.h>
#include <stdlib.h>

int classify(int x) {
  if (x < 0)
    return -1;
  if (x == 0)
    return 0;
  if (x > 100)
    return 2;
  return 1;
}

int main(int argc, char **argv) {
  int pos = 0;
  int big = 0;
  for (int i = 1; i < argc; i++) {
    int v = atoi(argv[i]);
    int c = classify(v);
    if (c == 2)
      big = big + 1;
    if (c < 0)
      return 3;
    pos = pos + c;
    printf("crit %d\n", pos);
  }
  printf("big %d\n", big);
  return 0;
}
