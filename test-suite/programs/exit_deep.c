/* exit() three frames deep on the 8th iteration (i == 7): every frame on the stack leaves abnormally. */
#include <stdlib.h>
static volatile int sink;
__attribute__((noinline)) void g(int i) {
    if (i == 7)
        exit(0);
    sink++; // expect: 7
}
__attribute__((noinline)) void f(int i) {
    g(i);
    sink += 2; // expect-out: 7
}

int main(void) {
    for (int i = 0; i < 10; i++) {
        f(i);
        sink += 3; // expect-out: 7
    }
    return 1; /* never reached */
}
