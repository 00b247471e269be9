/* Trace mode: exit() from two calls deep, in the third iteration of a loop. */
#include <stdlib.h>
static void g(int i) {
  if (i == 2)
    exit(3);
}
static void f(int i) { g(i); }
int main(void) {
  for (int i = 0; i < 5; i++)
    f(i);
  return 0;
}
