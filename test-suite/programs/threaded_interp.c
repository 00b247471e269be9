// A threaded-code interpreter: every instruction ends in `goto *dispatch[op]`. Clang sends all of them to one
// `indirectbr`, whose edges into the handlers cannot be split, so their instrumentation goes into the handlers
// through PHIs; the loop's back edges are the plain branches to that `indirectbr`. Calls a helper from inside
// the loop. `halt`'s address is taken twice, so clang lists its block twice in the `indirectbr` (as in
// oniguruma's matcher): both entries are one transfer, one edge.
#include <stdio.h>

enum { PUSH, ADD, MUL, DUP, JNZ, DEC, SWAP, CALL, HALT };

static long helper(long x) {
    if (x % 3 == 0)
        return x / 3;
    return x + 1;
}

static long run(const int *code) {
    static void *const dispatch[] = {&&push, &&add, &&mul, &&dup, &&jnz, &&dec, &&swap, &&call, &&halt};
    static void *const stop = &&halt;
    long stack[16] = {0};
    int sp = 0, pc = 0;
    goto *(code[pc] == HALT ? stop : dispatch[code[pc]]);
push:
    stack[sp++] = code[pc + 1];
    pc += 2;
    goto *dispatch[code[pc]];
add:
    sp--;
    stack[sp - 1] += stack[sp];
    pc++;
    goto *dispatch[code[pc]];
mul:
    sp--;
    stack[sp - 1] *= stack[sp];
    pc++;
    goto *dispatch[code[pc]];
dup:
    stack[sp] = stack[sp - 1];
    sp++;
    pc++;
    goto *dispatch[code[pc]];
jnz:
    pc = stack[--sp] ? code[pc + 1] : pc + 2;
    if (pc < 0)
        goto halt; // never taken: `halt` has a predecessor besides the indirectbr
    goto *dispatch[code[pc]];
dec:
    stack[sp - 1]--;
    pc++;
    goto *dispatch[code[pc]];
swap: {
    long t = stack[sp - 1];
    stack[sp - 1] = stack[sp - 2];
    stack[sp - 2] = t;
    pc++;
    goto *dispatch[code[pc]];
}
call:
    stack[sp - 1] = helper(stack[sp - 1]);
    pc++;
    goto *dispatch[code[pc]];
halt:
    return sp ? stack[sp - 1] : 0;
}

int main(void) {
    // acc = 1; n = 6; do { acc = helper(acc * 2) + 1; n--; } while (n); return acc  (stack: acc n)
    static const int program[] = {PUSH, 1, PUSH, 6, /* 4: */ SWAP, PUSH, 2, MUL, CALL, PUSH, 1, ADD, SWAP, DEC,
                                  DUP, JNZ, 4, SWAP, HALT};
    static const int empty[] = {HALT};
    long total = 0;
    for (int i = 0; i < 5; i++)
        total += run(i == 2 ? empty : program);
    printf("%ld\n", total);
    return 0;
}
