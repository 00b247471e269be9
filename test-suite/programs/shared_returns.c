/* Returns through one shared block from many places: a switch whose cases return at once (their path numbers
 * constant), a case that returns after a branch (an edge from a block with two ways on), one that first calls
 * a function that may exit (its block counts arrivals), one after a loop (a run-time path number); `classify`
 * is the returning function. The last call exits from inside it. Path mode's counts must equal edge mode's
 * (where a return is counted decides whether the code generator can copy the return into the cases). */
#include <stdio.h>
#include <stdlib.h>

static volatile int sink;

__attribute__((noinline)) static void maybe_exit(int v) {
    if (v == 1003) {
        printf("exit %d\n", sink);
        exit(0);
    }
    sink += v;
}

__attribute__((noinline)) static int classify(int v, int w) {
    switch (v % 8) {
    case 0:
        return 10;
    case 1:
        return w > 3;
    case 2:
        if (w & 1)
            return 20;
        return 21;
    case 3:
        maybe_exit(v);
        return 30;
    case 4: {
        int s = 0;
        for (int i = 0; i < w; i++)
            s += i;
        return s;
    }
    case 5:
        return w < 0 ? -1 : 50;
    default:
        return v - w;
    }
}

int main(void) {
    long total = 0;
    for (int i = 0; i < 1000; i++)
        total += classify(i, i % 7);
    printf("%ld\n", total);
    classify(1003, 0);
    return 1;
}
