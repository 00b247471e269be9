/* Promises to the optimiser: blocks that end in `unreachable` with nothing before it (__builtin_unreachable(),
 * gnulib's `assume`, a switch's impossible default). No defined execution reaches them; the optimiser deletes
 * them and folds the branches into them. pathprof must leave them without code, or a program that breaks such a
 * promise (as sed's regex does: re_node_set_insert asserts an element is new) falls off the end of a function
 * its plain build survives. The IR test checks that the optimised functions keep no more `unreachable`s than
 * the plain build; the counts below are derived by hand. */
#include <stdio.h>

#define assume(c) ((c) ? (void)0 : __builtin_unreachable())

static volatile int sink;

/* (x & 3) has four values, all handled: the default is impossible. x in [0,40): 10 each. */
__attribute__((noinline)) static int classify(int x) {
    switch (x & 3) {
    case 0:
        sink += 1; // expect: 10
        return 10;
    case 1:
        sink += 2; // expect: 10
        return 20;
    case 2:
        sink += 3; // expect: 10
        return 30;
    case 3:
        return 40;
    default:
        __builtin_unreachable();
    }
}

/* Sorted insertion that promises the element is not there yet (gnulib's re_node_set_insert has this shape). */
__attribute__((noinline)) static int insert(long *set, int n, long elem) {
    int i;
    if (n == 0) {
        set[0] = elem; // expect: 1
        return 1;
    }
    for (i = n; i > 0 && set[i - 1] > elem; i--)
        set[i] = set[i - 1]; // expect: 45
    assume(i == 0 || set[i - 1] < elem);
    set[i] = elem;
    return n + 1;
}

int main(void) {
    int total = 0;
    for (int x = 0; x < 40; x++)
        total += classify(x);
    long set[16];
    int n = 0;
    /* Ten elements in decreasing order: the k-th insertion (k = 0..9) shifts k elements, 0+1+...+9 = 45. */
    for (long e = 10; e > 0; e--)
        n = insert(set, n, e);
    for (int i = 0; i < n; i++)
        total += (int)set[i];
    printf("%d %d\n", total, n);
    return total == 1055 ? 0 : 1;
}
