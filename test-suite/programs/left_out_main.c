// Functions the pass must leave uninstrumented, and report as not profiled: `asm goto` (LLVM `callbr`, no mode
// handles it). The rest is profiled as usual, the setjmp caller `guarded` included.
#include <setjmp.h>
#include <stdio.h>

int asm_only(int x); // left_out_asm.c: a module none of whose functions can be instrumented

static jmp_buf env;

__attribute__((noinline)) int twice(int x) {
    return 2 * x; // expect: 3
}

__attribute__((noinline)) int jump_if_odd(int x) {
    asm goto("testl $1, %0\n\tjnz %l1" : : "r"(x) : "cc" : odd);
    return 0;
odd:
    return 1;
}

__attribute__((noinline)) int guarded(int x) {
    if (setjmp(env) == 0) {
        if (x > 1)
            longjmp(env, 1);
        return x;
    }
    return -1;
}

int main(void) {
    int sum = 0;
    for (int i = 0; i < 3; i++) {
        sum += twice(i) + jump_if_odd(i) + guarded(i) + asm_only(i); // expect: 3
    }
    printf("sum %d\n", sum);
    return sum == 12 ? 0 : 1; // 0 + (2+1+1+0) + (4+0-1+5)
}
