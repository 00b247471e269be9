/* A program that defines a C library function itself, in another translation unit (trace_libc_named_lib.c), as
 * bash defines getenv over its shell variables: the optimiser takes each call of `getenv` here for the C
 * library's, which only reads memory, but the program's own definition is traced and writes the thread's trace
 * state. Before the fix the optimiser carried the accumulator stored after one call across the next and
 * lost the callee's bits. By hand: `lookup` runs 4 times per round, 3 rounds, and enters getenv twice each: 24. */
#include <stdio.h>
#include <stdlib.h>

static const char *names[] = {"PP_ONE", "PP_TWO", "PP_NONE", "PP_ONE"};

__attribute__((noinline)) static int lookup(int round, int k) {
    const char *v = getenv(names[k]);
    const char *w = getenv(names[(k + 1) % 4]); /* right after a Done: its accumulator was just stored */
    if (!v || !w)
        return -1;
    return round % 2 ? v[0] + w[0] : v[0] - w[0];
}

int main(void) {
    long sum = 0;
    for (int round = 0; round < 3; round++)
        for (int k = 0; k < 4; k++)
            sum += lookup(round, k);
    printf("%ld\n", sum);
    return 0;
}
