/* Certain calls (pathprof_core::tracing::regenerate, "Implicit calls"): direct calls of functions the call is
 * sure to run — a static function and a strong external one of the executable (also recursive) — write no
 * Enter and no Done. test-suite/tests/trace.rs counts the bits by hand and enters g from gdb at the two points
 * a signal handler could (before g's entry took its announcement, and after g returned). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int g(int x) {
    if (x & 1)
        return x * 3;
    return x / 2;
}

__attribute__((noinline)) int depth(int n) { return n == 0 ? 0 : 1 + depth(n - 1); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    volatile int s = 0;
    for (int i = 0; i < n; i++)
        s += g(i);
    s += depth(n);
    printf("%d\n", s);
    return 0;
}
