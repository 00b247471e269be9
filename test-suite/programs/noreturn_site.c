/* A call site of the interprocedural modes whose callee never returns: the call block is split from the
 * `unreachable` after it, and that block must stay an ordinary termination block (the return site), not a block
 * "no defined execution reaches" (assume.c). The program ends inside finish() through exit(). */
#include <stdlib.h>

static volatile int sink;

__attribute__((noreturn, noinline)) static void finish(int code) {
    sink = code; // expect: 1
    exit(code == 45 ? 0 : 1);
}

int main(void) {
    int total = 0;
    for (int i = 0; i < 10; i++)
        total += i; // expect: 10
    finish(total);
}
