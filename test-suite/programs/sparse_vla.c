/* A function with 2^14 paths (fourteen independent branches, above the dense array's 4096) counts in a sparse
 * region; its variable-length array is allocated in the entry block with a size computed there, and the
 * region's entry code (the load of the region's address, the check that it is mapped) must leave that alloca
 * after its size. Expected (hand-derived): wide() entered 100 times. */
#include <stdio.h>

__attribute__((noinline)) static unsigned wide(unsigned x, int n) {
    unsigned a[n];
    unsigned s = 0;
    for (int i = 0; i < n; i++)
        a[i] = x + i;
#define B(k) if (x & (1u << k)) s += a[k % n];
    B(0) B(1) B(2) B(3) B(4) B(5) B(6) B(7) B(8) B(9) B(10) B(11) B(12) B(13)
#undef B
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    unsigned t = 0;
    for (unsigned i = 0; i < 100; i++)
        t += wide(i * 7, argc + 3);
    printf("%u\n", t);
    return 0;
}
