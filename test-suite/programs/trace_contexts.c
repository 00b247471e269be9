/* User contexts (makecontext/swapcontext/setcontext), as coroutine libraries use them: each context runs on a
 * stack of its own, and a switch returns into another context's frames. By hand: `work` runs 10 times — 3 and 2
 * times in the two generators, once in `dive`, once in main between the dive's switches, once in each of the
 * two `stuck` contexts and once in `leaver`. Seven contexts run: main; the two generators and `deep`, which
 * return to main through uc_link; the first `stuck`, abandoned when its context is made anew for `leaver`;
 * `leaver`, which leaves for main with setcontext; the second `stuck`, still suspended when main returns. */
#include <stdio.h>
#include <ucontext.h>

static ucontext_t main_ctx, gen_ctx[2], deep_ctx, spare_ctx;
static char stacks[4][256 * 1024];
static volatile int done[2];
static long total;

static int work(int x) {
    int s = 0;
    for (int i = 0; i < x; i++)
        s += (i % 3 == 0) ? i : 1;
    return s;
}

/* Yields `n` times to main, then returns (its uc_link: main). */
static void generator(int id, int n) {
    for (int k = 0; k < n; k++) {
        total += work(id + k + 2);
        swapcontext(&gen_ctx[id], &main_ctx);
    }
    done[id] = 1;
}

/* Switches to main from four activations deep, then unwinds when resumed. */
static int dive(int depth) {
    if (depth == 0) {
        swapcontext(&deep_ctx, &main_ctx);
        return work(5);
    }
    return dive(depth - 1) + depth;
}

static void deep(void) { total += dive(3); }

/* Yields to main in the middle of an endless loop: never finishes. */
static void stuck(void) {
    for (int round = 0;; round++) {
        total += work(round + 4);
        swapcontext(&spare_ctx, &main_ctx);
    }
}

/* Leaves for main with setcontext: its own context is never resumed. */
static void leaver(void) {
    total += work(7);
    setcontext(&main_ctx);
}

static void make(ucontext_t *uc, char *stack, ucontext_t *link) {
    getcontext(uc);
    uc->uc_stack.ss_sp = stack;
    uc->uc_stack.ss_size = sizeof stacks[0];
    uc->uc_link = link;
}

int main(void) {
    for (int id = 0; id < 2; id++) {
        make(&gen_ctx[id], stacks[id], &main_ctx);
        makecontext(&gen_ctx[id], (void (*)(void))generator, 2, id, 3 - id);
    }
    while (!done[0] || !done[1])
        for (int id = 0; id < 2; id++)
            if (!done[id])
                swapcontext(&main_ctx, &gen_ctx[id]);
    make(&deep_ctx, stacks[2], &main_ctx);
    makecontext(&deep_ctx, deep, 0);
    swapcontext(&main_ctx, &deep_ctx);
    total += work(2);
    swapcontext(&main_ctx, &deep_ctx);
    make(&spare_ctx, stacks[3], &main_ctx);
    makecontext(&spare_ctx, stuck, 0);
    swapcontext(&main_ctx, &spare_ctx);
    make(&spare_ctx, stacks[3], 0);
    makecontext(&spare_ctx, leaver, 0);
    swapcontext(&main_ctx, &spare_ctx);
    make(&spare_ctx, stacks[3], &main_ctx);
    makecontext(&spare_ctx, stuck, 0);
    swapcontext(&main_ctx, &spare_ctx);
    printf("total %ld\n", total);
    return 0;
}
