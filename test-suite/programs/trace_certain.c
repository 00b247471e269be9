/* Certain calls (pathprof_core::tracing::regenerate, "Implicit calls"): direct calls of functions the call is
 * sure to run — a static function and a strong external one of the executable (also recursive) — write no
 * Enter and no Done. A weak function (a link may replace it: not certain) is called directly (announced, one
 * bit) and then through a pointer (a full id, through the entry cache: its first such entry misses even though
 * the direct calls entered it before). test-suite/tests/trace.rs counts the bits by hand and enters g from gdb
 * at the two points a signal handler could (before g's entry took its announcement, and after g returned). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int g(int x) {
    if (x & 1)
        return x * 3;
    return x / 2;
}

__attribute__((noinline)) int depth(int n) { return n == 0 ? 0 : 1 + depth(n - 1); }

__attribute__((weak, noinline)) int hook(int x) { return x + 1; }
static int (*volatile hookp)(int) = hook;

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    volatile int s = 0;
    for (int i = 0; i < n; i++)
        s += g(i);
    s += depth(n);
    s += hook(1) + hook(2);
    s += hookp(3) + hookp(4);
    printf("%d\n", s);
    return 0;
}
