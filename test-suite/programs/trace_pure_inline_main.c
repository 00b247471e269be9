/* Trace mode: a pure function of another translation unit (trace_pure_inline_lib.c) called from the body of
 * an `extern inline` (gnu_inline) function, which the optimiser inlines into traced code after instrumentation
 * (GMP's mpz_perfect_square_p calling mpn_perfect_square_p from gmp.h). The callee's bits must survive. */
#include <stdio.h>
__attribute__((pure)) int weight(const int *v, int n);
extern __inline__ __attribute__((gnu_inline)) int weigh(const int *v, int n) {
  return n > 0 ? weight(v, n) : 0;
}
int main(int argc, char **argv) {
  (void)argv;
  int v[16];
  for (int i = 0; i < 16; i++)
    v[i] = i * 7 % 5;
  int s = 0;
  for (int r = 0; r < 40; r++) {
    if (v[r % 16] > argc)
      s += weigh(v, 16 - r % 16);
    else
      s -= r;
  }
  printf("%d\n", s);
  return 0;
}
