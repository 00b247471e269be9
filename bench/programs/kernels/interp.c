/* A register-machine bytecode interpreter: one switch in a loop, the shape of every simple VM. The guest
 * program runs an LCG and an inner loop of data-dependent length, n times. */
#include <stdlib.h>
#include "kernels.h"

enum op { LI, ADD, ADDI, MULI, SHRI, ANDI, XOR, JGE, JLT, JMP, HALT };

struct insn {
  enum op op;
  int a, b, c;  /* registers; c is the jump target for jumps */
  int64_t imm;
};

static uint64_t run(const struct insn *code, uint64_t *r) {
  long pc = 0;
  for (;;) {
    const struct insn *i = &code[pc++];
    switch (i->op) {
    case LI: r[i->a] = (uint64_t)i->imm; break;
    case ADD: r[i->a] = r[i->b] + r[i->c]; break;
    case ADDI: r[i->a] = r[i->b] + (uint64_t)i->imm; break;
    case MULI: r[i->a] = r[i->b] * (uint64_t)i->imm; break;
    case SHRI: r[i->a] = r[i->b] >> i->imm; break;
    case ANDI: r[i->a] = r[i->b] & (uint64_t)i->imm; break;
    case XOR: r[i->a] = r[i->b] ^ r[i->c]; break;
    case JGE: if (r[i->a] >= r[i->b]) pc = i->c; break;
    case JLT: if (r[i->a] < r[i->b]) pc = i->c; break;
    case JMP: pc = i->c; break;
    case HALT: return r[2];
    default: abort();
    }
  }
}

uint64_t kernel_interp(long n) {
  struct insn code[] = {
      {LI, 0, 0, 0, 0},           /* 0: i = 0 */
      {LI, 1, 0, 0, n},           /* 1: limit = n */
      {LI, 2, 0, 0, 0},           /* 2: acc = 0 */
      {LI, 3, 0, 0, 1},           /* 3: x = 1 */
      {MULI, 3, 3, 0, 1103515245}, /* 4: loop: x = x * a */
      {ADDI, 3, 3, 0, 12345},     /* 5: x += c */
      {SHRI, 4, 3, 0, 16},        /* 6: m = x >> 16 */
      {ANDI, 4, 4, 0, 7},         /* 7: m &= 7 */
      {LI, 5, 0, 0, 0},           /* 8: j = 0 */
      {JGE, 5, 4, 13, 0},         /* 9: inner: if j >= m goto 13 */
      {ADD, 2, 2, 5, 0},          /* 10: acc += j */
      {ADDI, 5, 5, 0, 1},         /* 11: j++ */
      {JMP, 0, 0, 9, 0},          /* 12: goto inner */
      {XOR, 2, 2, 3, 0},          /* 13: acc ^= x */
      {ADDI, 0, 0, 0, 1},         /* 14: i++ */
      {JLT, 0, 1, 4, 0},          /* 15: if i < limit goto loop */
      {HALT, 0, 0, 0, 0},         /* 16 */
  };
  uint64_t r[8] = {0};
  return run(code, r);
}
