/* A longjmp from one stack to another (as coroutine libraries that switch with setjmp/longjmp do: GNU Pth's
 * sjlj machine contexts): main sets a jump buffer and switches to a context on a stack of its own, whose
 * function longjmps back into main's frame. The landing is no activation of the stream that jumped. */
#include <setjmp.h>
#include <stdio.h>
#include <ucontext.h>

static jmp_buf back;
static ucontext_t main_ctx, co_ctx;
static char stack[128 * 1024];
static long total;

static int work(int x) {
    int s = 0;
    for (int i = 0; i < x; i++)
        s += (i & 1) ? i : 2;
    return s;
}

static void co(void) {
    total += work(5);
    longjmp(back, 1);
}

int main(void) {
    if (setjmp(back) == 0) {
        getcontext(&co_ctx);
        co_ctx.uc_stack.ss_sp = stack;
        co_ctx.uc_stack.ss_size = sizeof stack;
        co_ctx.uc_link = 0;
        makecontext(&co_ctx, co, 0);
        swapcontext(&main_ctx, &co_ctx);
    }
    total += work(3);
    printf("total %ld\n", total);
    return 0;
}
