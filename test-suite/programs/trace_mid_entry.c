/* A loop entered in the middle (irreducible flow), the shape of re2c's scanners (cmark's
 * _scan_setext_heading_line): `L16: c = *++p; L17: if (c == ' ') goto L16;` is entered at its test L17 from the
 * '-' arm and at its body L16 from the '=' arm. Bit tracing deferred such a cycle's bits to its exit with an
 * iteration count that only its header starts, so an entry at the body ran on a count nobody had started: one
 * iteration too many at -O2, an endless trace at -O0. Hand-derived: the inputs below run L16 1 + 2 + 0 + 3 = 6
 * times from the '=' arm ("= ", "=  x", "=x", "=   ") and 1 + 0 + 3 = 4 times from the '-' arm ("- ", "-x",
 * "-   y"). */
#include <stdio.h>

__attribute__((noinline)) static int scan(const unsigned char *p) {
    unsigned char c = *p;
    if (c == '-') {
        c = *++p;
        if (c == ' ')
            goto L17;
        return 0;
    }
    if (c == '=') {
        c = *++p;
        if (c == ' ')
            goto L16;
        return 0;
    }
    return 0;
L16:
    c = *++p; // expect: 10
L17:
    if (c == ' ')
        goto L16;
    return c == 0 ? 2 : 1;
}

int main(void) {
    static const char *inputs[] = {"= ", "=  x", "=x", "=   ", "- ", "-x", "-   y", "x"};
    int sum = 0;
    for (unsigned i = 0; i < sizeof inputs / sizeof *inputs; i++)
        sum = sum * 3 + scan((const unsigned char *)inputs[i]);
    printf("%d\n", sum);
    return 0;
}
