/* Block mode (BL94 §3.3) needs fewer counters than edge mode here, by construction: each of tally(), twice() and
 * main() returns from a block that first calls fflush(), a call that may not return, so the block has a
 * Termination edge to EXIT (never counted) parallel to its Return edge. Edge mode must count the Return edge
 * (the two close a cycle of the spanning tree); block mode drops that counter, because the two edges form a
 * pipeless 2-cycle (a fork at the block, a join at EXIT) and the block's count follows from its in-edges.
 * Hand count: at least 3 counters fewer. i in [0,10): i%3==0 for 0,3,6,9; i>6 for 7,8,9. Prints "69 16". */
#include <stdio.h>
static volatile int sink;

__attribute__((noinline)) void tally(int i) {
    if (i % 3 == 0)
        sink += 1; // expect: 4
    else
        sink += 2; // expect: 6
    fflush(stdout);
}

__attribute__((noinline)) int twice(int i) {
    int r = i;
    if (i > 6)
        r = 2 * i; // expect: 3
    fflush(stdout);
    return r;
}

int main(void) {
    int total = 0;
    for (int i = 0; i < 10; i++) {
        tally(i); // expect: 10
        total += twice(i);
    }
    printf("%d %d\n", total, sink);
    return 0;
}
