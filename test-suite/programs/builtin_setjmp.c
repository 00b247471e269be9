/* GCC's __builtin_setjmp/__builtin_longjmp, which clang lowers to intrinsics (llvm.eh.sjlj.setjmp/longjmp)
 * that LLVM marks neither returns_twice nor as leaving the frame: jump_if(i) runs for i = 0..9 and jumps back
 * for i = 2, 5, 8, so it is entered 10 times and returns 7 times; run's setjmp returns 13 times, 3 of them a
 * second time. (Before the pass knew them, every mode reported jump_if entered 7 times, exact.) */
#include <stdio.h>

static void *buf[5];
static volatile int sink;

__attribute__((noinline)) void jump_if(int i) {
    if (i % 3 == 2)
        __builtin_longjmp(buf, 1); // expect: 3
    sink += i; // expect: 7
}

__attribute__((noinline)) int run(int n) {
    int jumps = 0;
    for (volatile int i = 0; i < n; i++) {
        if (__builtin_setjmp(buf) == 0) {
            jump_if(i); // expect: 10
        } else {
            jumps++; // expect: 3
        }
    }
    return jumps;
}

int main(void) {
    int j = run(10);
    printf("%d %d\n", j, sink);
    return 0;
}
