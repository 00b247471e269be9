// Calls through a function pointer: the callees are address-taken, so each call through the pointer starts
// a path of its own at the callee (a root), while the direct call of `twice` from main is followed.
#include <stdio.h>

static int inc(int x) { return x + 1; }
static int dbl(int x) { return x * 2; }

static int twice(int (*f)(int), int x) {
    return f(f(x));               // expect: 4
}

int main(int argc, char **argv) {
    (void)argv;
    int (*fs[2])(int) = {inc, dbl};
    int acc = 0;
    for (int i = 0; i < 4; i++) {
        acc += twice(fs[(i + argc) % 2], i);
    }
    printf("%d\n", acc);
    return 0;
}
