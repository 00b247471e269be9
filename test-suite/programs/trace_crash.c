/* Trace mode: a crash two calls deep after deterministic work (recursion, a loop): SIGSEGV through a null
 * pointer, or abort() with the argument "abort". The exit status is the signal's. */
#include <stdlib.h>
#include <string.h>
static int *volatile nowhere;
static int leaves;
static int down(int n, int how) {
  if (n == 0) {
    if (++leaves == 3) {
      if (how)
        abort();
      return *nowhere;
    }
    return 1;
  }
  int r = 0;
  for (int i = 0; i < n; i++)
    r += (i & 1) ? 1 : 2;
  return r + down(n - 1, how);
}
int main(int argc, char **argv) {
  int how = argc > 1 && strcmp(argv[1], "abort") == 0;
  int s = 0;
  for (int i = 0; i < 5; i++)
    s += down(i, how);
  return s & 1;
}
