// A recursive pattern matcher shaped like Lua's `match` (lstrlib.c): a `goto init` loop around a switch, a
// call to itself for every `*`, many branches per character. In context mode it is a recursive function with a
// loop and many ρ(NVC) products, so the pass reads NVC from a volatile slot in it (interproc.rs checks the IR
// and that its counts still equal edge mode's).
#include <stdio.h>

static int class_matches(char cls, char c) {
    switch (cls) {
    case 'd': return c >= '0' && c <= '9';
    case 'a': return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    case 's': return c == ' ' || c == '\t';
    case 'w': return class_matches('d', c) || class_matches('a', c);
    default: return c == cls;
    }
}

static int match(const char *s, const char *p, int depth) {
init:
    switch (*p) {
    case '\0':
        return *s == '\0';
    case '*':
        if (depth > 40)
            return 0;
        for (const char *t = s;; t++) {
            if (match(t, p + 1, depth + 1))
                return 1;
            if (*t == '\0')
                return 0;
        }
    case '?':
        if (*s == '\0')
            return 0;
        s++;
        p++;
        goto init;
    case '%':
        if (p[1] == '\0' || *s == '\0' || !class_matches(p[1], *s))
            return 0;
        s++;
        p += 2;
        goto init;
    case '[': {
        const char *q = p + 1;
        int negate = *q == '^', found = 0;
        if (negate)
            q++;
        for (; *q && *q != ']'; q++) {
            if (q[1] == '-' && q[2] && q[2] != ']') {
                if (*s >= q[0] && *s <= q[2])
                    found = 1;
                q += 2;
            } else if (*q == *s) {
                found = 1;
            }
        }
        if (*q != ']' || *s == '\0' || found == negate)
            return 0;
        s++;
        p = q + 1;
        goto init;
    }
    case '+':
        if (*s == '\0' || *s != p[1])
            return 0;
        while (*s == p[1])
            s++;
        p += 2;
        goto init;
    default:
        if (*s != *p)
            return 0;
        s++;
        p++;
        goto init;
    }
}

int main(void) {
    static const char *const subjects[] = {"hello world", "a1b2c3", "  tabs\tand spaces", "x+y=z", "aaaab",
                                           "[bracket]", "", "2026-11-22", "pathprof", "zzz"};
    static const char *const patterns[] = {"h*o w?rld", "%a%d%a%d*", "*%s*", "x?y=z", "+ab", "[[]*]", "",
                                           "%d%d%d%d-%d%d-%d%d", "p[a-c]th*f", "[^a-y]*", "*", "?*?"};
    int hits = 0;
    for (int round = 0; round < 3; round++)
        for (unsigned i = 0; i < sizeof subjects / sizeof *subjects; i++)
            for (unsigned j = 0; j < sizeof patterns / sizeof *patterns; j++)
                hits += match(subjects[i], patterns[j], 0);
    printf("%d\n", hits);
    return 0;
}
