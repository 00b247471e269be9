/* pathprof demo: a tiny expression evaluator over generated input.
 * It has loops, a switch with shared targets, recursion and a hot/cold split, so its profile is worth reading. */
#include <stdio.h>
#include <string.h>

static unsigned seed = 12345;
static unsigned next_random(void) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) & 0x7fff;
}

/* Writes a random arithmetic expression of the given depth into buf. */
static int gen(char *buf, int pos, int depth) {
    if (depth == 0 || next_random() % 4 == 0) {
        pos += sprintf(buf + pos, "%u", next_random() % 100);
        return pos;
    }
    buf[pos++] = '(';
    pos = gen(buf, pos, depth - 1);
    buf[pos++] = "+-*/"[next_random() % 4];
    pos = gen(buf, pos, depth - 1);
    buf[pos++] = ')';
    return pos;
}

static const char *cur;

static unsigned long expr(void);

static unsigned long primary(void) {
    if (*cur == '(') {
        cur++;
        unsigned long v = expr();
        cur++; /* ')' */
        return v;
    }
    unsigned long v = 0;
    while (*cur >= '0' && *cur <= '9')
        v = v * 10 + (unsigned long)(*cur++ - '0');
    return v;
}

static unsigned long expr(void) {
    unsigned long lhs = primary();
    while (*cur && *cur != ')') {
        char op = *cur++;
        unsigned long rhs = primary();
        switch (op) {
        case '+': lhs += rhs; break;
        case '-': lhs -= rhs; break;
        case '*': lhs *= rhs; break;
        case '/':
        case '%':
            if (rhs == 0) {
                lhs = 0; /* cold: division by zero */
                break;
            }
            lhs /= rhs;
            break;
        default: return lhs;
        }
    }
    return lhs;
}

int main(void) {
    static char buf[1 << 16];
    unsigned long total = 0; /* unsigned: the products wrap, as C defines for unsigned types only */
    for (int i = 0; i < 2000; i++) {
        memset(buf, 0, sizeof buf);
        gen(buf, 0, 6);
        cur = buf;
        total += expr();
    }
    printf("checksum %lu\n", total);
    return 0;
}
