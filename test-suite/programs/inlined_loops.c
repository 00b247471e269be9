/* Loops whose counter updates come from callees the optimiser inlines after instrumentation: promotion after
 * inlining (pass/src/promote.rs, `promote_after_inlining`) keeps them in registers where nothing in the loop can
 * end the activation abnormally, and leaves them in memory where something can: a callee that longjmps out of
 * the loop, one that calls exit(). Counts derived by hand for the calls in main: `classify` runs for i = 0..99
 * in sum_loop (34 multiples of 3), for i = 0..50 in jump_loop (17) and for i = 0..10 in exit_loop (4). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static inline long classify(long x) {
    if (x % 3 == 0)
        return 1; // expect: 55
    return 2; // expect: 107
}

/* Without loops or calls: LLVM infers that it returns (willreturn, nounwind), so a loop calling it qualifies. */
__attribute__((noinline)) static long triple(long x) {
    return 3 * x; // expect: 100
}

/* Only inlined code and a call that surely returns: every update in the loop is promoted. */
__attribute__((noinline)) long sum_loop(int n) {
    long s = 0;
    for (int i = 0; i < n; i++)
        s += classify(i) + triple(i); // expect: 100
    return s;
}

/* A counting nest through an inlined callee: promoted, it folds to closed form like the plain build's. */
static inline long one_more(long x) {
    return x + 1; // expect: 8000
}

__attribute__((noinline)) long nest(int n) {
    long s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < n; k++)
                s = one_more(s);
    return s;
}

static jmp_buf env;

static inline void jump_at(int i, int last) {
    if (i == last)
        longjmp(env, 1); // expect: 1
}

/* The inlined jump_at longjmps out of the loop: nothing in it may wait in a register. */
__attribute__((noinline)) long jump_loop(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) {
        s += classify(i);
        jump_at(i, n / 2);
    }
    return s;
}

/* Ends the program from inside the loop, in a callee the optimiser keeps (it is too big to inline, and
 * noinline besides): the loop is not promoted, and every count up to exit() is in memory. */
__attribute__((noinline)) void stop_at(int i, int last, long s) {
    if (i == last) {
        printf("exit at %d with %ld\n", i, s); // expect: 1
        exit(0);
    }
}

__attribute__((noinline)) long exit_loop(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) {
        s += classify(i);
        stop_at(i, 10, s); // expect: 11
    }
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = 99 + argc; /* 100, unknown to the optimiser */
    printf("%ld %ld\n", sum_loop(n), nest(20));
    if (!setjmp(env))
        jump_loop(n);
    return (int)exit_loop(n); /* exits inside, at i = 10 */
}
