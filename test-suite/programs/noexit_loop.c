/* A loop with no exit edge, left only by exit() on the 100th iteration, plus a switch in the body. */
#include <stdlib.h>
static volatile int sink;
__attribute__((noinline)) void step(int i) {
    switch (i % 4) {
    case 0:
        sink += 1; // expect: 25
        break;
    case 1:
    case 2:
        sink += 2; // expect: 50
        break;
    default:
        sink += 3; // expect: 25
    }
}

int main(void) {
    int i = 0;
    for (;;) {
        step(i);
        if (++i == 100)
            exit(0); // expect: 1
    }
}
