/* A bytecode interpreter whose dispatch `switch` has 40 cases that all end at one join (a dispatch function:
 * context and piecewise modes place its edge values on spanning-tree chords, pass/src/interproc_place.rs),
 * with calls from inside the cases (interprocedural sites) and branches inside cases (critical edges). */
#include <stdio.h>

static int acc;

static int helper(int x) {
    if (x & 1)
        return x * 3 + 1;
    return x / 2;
}

static void note(int op) {
    if (op % 7 == 0)
        acc ^= op;
}

static int run(const unsigned char *code, int n, int seed) {
    int x = seed;
    for (int pc = 0; pc < n; pc++) {
        switch (code[pc]) {
        case 0: x += 1; break;
        case 1: x -= 1; break;
        case 2: x *= 2; break;
        case 3: x = helper(x); break;
        case 4: if (x > 100) x -= 50; break;
        case 5: if (x < 0) x = -x; else x += 3; break;
        case 6: note(6); break;
        case 7: note(7); x++; break;
        case 8: x ^= 0x55; break;
        case 9: x = helper(x) + helper(x + 1); break;
        case 10: x += 10; break;
        case 11: x -= 11; break;
        case 12: if (x & 4) x >>= 1; break;
        case 13: x <<= 1; break;
        case 14: x %= 97; break;
        case 15: if (x > 5) note(15); break;
        case 16: x += pc; break;
        case 17: x -= pc; break;
        case 18: x = x * 5 + 1; break;
        case 19: if (x == 0) x = 19; break;
        case 20: x |= 1; break;
        case 21: x &= ~1; break;
        case 22: note(x & 63); break;
        case 23: x += 23; break;
        case 24: x -= 24; break;
        case 25: if (x % 3 == 0) x /= 3; else x = helper(x); break;
        case 26: x += 26; break;
        case 27: x = -x; break;
        case 28: x += 28; break;
        case 29: if (x > 1000) x = 1; break;
        case 30: x += 30; break;
        case 31: x -= 31; break;
        case 32: x ^= 32; break;
        case 33: x += helper(33); break;
        case 34: x -= 34; break;
        case 35: if (x & 8) note(35); break;
        case 36: x += 36; break;
        case 37: x -= 37; break;
        case 38: x ^= 38; break;
        default: x += 39; break;
        }
        acc += x & 15; /* the join of all 40 cases */
    }
    return x;
}

int main(void) {
    unsigned char code[400];
    unsigned s = 12345;
    for (int i = 0; i < 400; i++) {
        s = s * 1103515245u + 12345u;
        code[i] = (unsigned char)((s >> 16) % 41);
    }
    int total = 0;
    for (int r = 0; r < 5; r++)
        total += run(code, 400 - r * 37, r);
    printf("%d %d\n", total, acc);
    return 0;
}
