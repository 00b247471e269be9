/* A re2c-style scanner: a loop of 32 chained states, each a way out of it (a `return` on '>' and on any other
 * character), like cmark's _scan_autolink_email. Counter promotion flushes every promoted counter on every exit,
 * so such a loop grew by exits × counters (a 15-state version: 26,356 IR instructions for a 439-instruction
 * function; _scan_autolink_email: 161 s to compile in edge mode). The inputs below walk the chain, restart it at
 * '.', wrap around from the last state to the first and leave from both kinds of exit. */
#include <stdio.h>

#define STATE(i, next)                                                                                          \
    s##i : c = *p++;                                                                                             \
    switch (c) {                                                                                                 \
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':         \
    case 'a': case 'b': case 'c': case 'd': case 'e': case 'f':                                                  \
        goto next;                                                                                               \
    case '-':                                                                                                    \
        goto next;                                                                                               \
    case '.':                                                                                                    \
        goto s0;                                                                                                 \
    case '>':                                                                                                    \
        return (int)(p - start);                                                                                 \
    default:                                                                                                     \
        return 0;                                                                                                \
    }

__attribute__((noinline)) static int scan(const unsigned char *p) {
    const unsigned char *start = p;
    unsigned char c;
top:
    c = *p++;
    if (c == '.')
        goto s0;
    if (c == '>')
        return (int)(p - start);
    return 0;
    STATE(0, s1) STATE(1, s2) STATE(2, s3) STATE(3, s4) STATE(4, s5) STATE(5, s6) STATE(6, s7) STATE(7, s8)
    STATE(8, s9) STATE(9, s10) STATE(10, s11) STATE(11, s12) STATE(12, s13) STATE(13, s14) STATE(14, s15)
    STATE(15, s16) STATE(16, s17) STATE(17, s18) STATE(18, s19) STATE(19, s20) STATE(20, s21) STATE(21, s22)
    STATE(22, s23) STATE(23, s24) STATE(24, s25) STATE(25, s26) STATE(26, s27) STATE(27, s28) STATE(28, s29)
    STATE(29, s30) STATE(30, s31) STATE(31, top)
}

int main(void) {
    static const char *inputs[] = {
        ".a>",
        ".0123456789abcdef0123456789abcdef.x>",
        "x",
        ".aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b>",
        ".-.-",
    };
    long sum = 0;
    for (unsigned i = 0; i < sizeof inputs / sizeof *inputs; i++)
        sum = sum * 7 + scan((const unsigned char *)inputs[i]);
    printf("%ld\n", sum);
    return 0;
}
