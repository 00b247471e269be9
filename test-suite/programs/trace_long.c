/* Trace mode: a long loop with a data-dependent branch (about 6 Mbit of bit trace): for the size limit. */
#include <stdio.h>
int main(void) {
  unsigned x = 1, s = 0;
  for (int i = 0; i < 5000000; i++) {
    x = x * 1103515245u + 12345u;
    if (x >> 31)
      s += x & 7;
  }
  printf("%u\n", s);
  return 0;
}
