#include <stdio.h>
#include <stdlib.h>

static int emit(FILE *f, int x) {
  int r = x * 2;
  fputc('a' + x, f);
  if (ferror(f))
    r = -1;
  return r;
}

int main(int argc, char **argv) {
  FILE *ro = fopen("/dev/null", "r");
  FILE *rw = fopen("/dev/null", "w");
  int x = atoi(argv[1]);
  printf("crit %d\n", emit(argc > 2 ? ro : rw, x));
  return 0;
}
