/* Prints how much of the heap is in use after work whose paths count into run-time hash tables (built with
 * PATHPROF_PATH_ARRAY_MAX=1 PATHPROF_PATH_SPARSE_MAX=1). The runtime maps its tables outside the heap, so the
 * output is the uninstrumented build's: a program that reads memory it never initialised sees the same bytes. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
static unsigned mix(unsigned x) {
    for (int i = 0; i < 8; i++) {
        if (x & 1)
            x = x * 3 + 1;
        else
            x >>= 1;
        if (x % 7 == 3)
            x ^= 0x55;
    }
    return x;
}
int main(void) {
    unsigned s = 0;
    void *before = malloc(24);
    for (unsigned i = 0; i < 5000; i++)
        s += mix(i);
    void *after = malloc(24);
    struct mallinfo2 mi = mallinfo2();
    printf("%zu %zu %td %u\n", mi.arena, mi.uordblks, (char *)after - (char *)before, s % 2);
    free(before);
    free(after);
    return 0;
}
