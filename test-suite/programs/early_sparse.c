/* A function with 2^20 paths (twenty independent branches) counts in a sparse region the runtime maps; it is
 * called before any constructor runs (from .preinit_array, before the module registers: its region is not
 * mapped yet) and from main. Expected (hand-derived): wide() entered 8 + 24 = 32 times; with x = i * 37 the
 * bit tests vary. The region must not be in the image's writable segments (a conservative collector scans
 * those). */
#include <stdio.h>

static volatile unsigned sink;

__attribute__((noinline)) static unsigned wide(unsigned x) {
    unsigned s = 0;
#define B(n) if (x & (1u << n)) s += n + 1;
    B(0) B(1) B(2) B(3) B(4) B(5) B(6) B(7) B(8) B(9)
    B(10) B(11) B(12) B(13) B(14) B(15) B(16) B(17) B(18) B(19)
#undef B
    return s;
}

static void early(void) {
    for (unsigned i = 0; i < 8; i++)
        sink += wide(i * 37);
}

__attribute__((section(".preinit_array"), used)) static void (*const run_early)(void) = early;

int main(void) {
    for (unsigned i = 0; i < 24; i++)
        sink += wide(i * 37 + 1000);
    printf("%u\n", sink);
    return 0;
}
