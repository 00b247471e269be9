/* A naked function (x86-64 assembly only, no prologue): nothing may be added to it — piecewise mode at -O0
 * once did, and the program printed garbage. twice(x) runs for x = 0..5 and increments sink for 4 and 5;
 * `quiet`, marked no_profile_instrument_function, runs 6 times uncounted, as the user asked. Prints "27 2". */
#include <stdio.h>

__attribute__((naked)) int add1(int x) {
    __asm__("lea 1(%rdi), %eax\n\tret");
}

static volatile int sink;

__attribute__((noinline, no_profile_instrument_function)) int quiet(int x) {
    return x > 100 ? x : 0;
}

__attribute__((noinline)) int twice(int x) {
    if (x > 3)
        sink++; // expect: 2
    return add1(add1(x)) + quiet(x); // expect: 6
}

int main(void) {
    int s = 0;
    for (int i = 0; i < 6; i++)
        s += twice(i);
    printf("%d %d\n", s, sink);
    return 0;
}
