#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  int i = 0;
  int evens = 0;
  int total = 0;
top:
  if (i >= n)
    goto done;
  if (i % 2 == 0)
    goto even;
  total = total + i;
  i = i + 1;
  goto top;
even:
  evens = evens + 1;
  total = total + 2 * i;
  i = i + 1;
  goto top;
done:
  printf("total %d\n", total);
  printf("crit %d\n", evens);
  return 0;
}
