/* longjmp across two instrumented frames on the 4th iteration (i == 3). */
#include <setjmp.h>
static jmp_buf env;
static volatile int sink;
__attribute__((noinline)) void deep(int i) {
    if (i == 3)
        longjmp(env, 1);
    sink++; // expect: 9
}
__attribute__((noinline)) void mid(int i) {
    deep(i);
    sink += 2; // expect-out: 9
}

int main(void) {
    for (volatile int i = 0; i < 10; i++) {
        if (setjmp(env) == 0) {
            mid(i);
            sink += 3; // expect-out: 9
        } else {
            sink += 4; // expect: 1
        }
    }
    return 0;
}
