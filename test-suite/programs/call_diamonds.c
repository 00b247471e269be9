/* 64 checks in a row, each `if (check (i) != want) { report (i); errors++; }` as in GMP's tests/mpf/t-fits.c:
 * 2^64 acyclic paths, and every block of the unsplit function holds a call (site calls to `check`/`report`, and
 * an indirect call that may not return). Context and piecewise mode must cut it after its calls, not leave it out. */
#include <stdio.h>
static volatile int sink;
static void (*volatile note)(int) = 0;
__attribute__((noinline)) static int check(int i, int round) { return (i * 7 + round) % 5 == 0; }
__attribute__((noinline)) static void report(int i) { sink += i; }
static void quiet(int i) { sink -= i; }
__attribute__((noinline)) static int checks(int round) {
    int errors = 0;
    if (check(0, round) != 1) { report(0); errors++; }
    if (check(1, round) != 0) { note(1); errors++; }
    if (check(2, round) != 0) { report(2); errors++; }
    if (check(3, round) != 1) { note(3); errors++; }
    if (check(4, round) != 0) { report(4); errors++; }
    if (check(5, round) != 0) { note(5); errors++; }
    if (check(6, round) != 1) { report(6); errors++; }
    if (check(7, round) != 0) { note(7); errors++; }
    if (check(8, round) != 0) { report(8); errors++; }
    if (check(9, round) != 1) { note(9); errors++; }
    if (check(10, round) != 0) { report(10); errors++; }
    if (check(11, round) != 0) { note(11); errors++; }
    if (check(12, round) != 1) { report(12); errors++; }
    if (check(13, round) != 0) { note(13); errors++; }
    if (check(14, round) != 0) { report(14); errors++; }
    if (check(15, round) != 1) { note(15); errors++; }
    if (check(16, round) != 0) { report(16); errors++; }
    if (check(17, round) != 0) { note(17); errors++; }
    if (check(18, round) != 1) { report(18); errors++; }
    if (check(19, round) != 0) { note(19); errors++; }
    if (check(20, round) != 0) { report(20); errors++; }
    if (check(21, round) != 1) { note(21); errors++; }
    if (check(22, round) != 0) { report(22); errors++; }
    if (check(23, round) != 0) { note(23); errors++; }
    if (check(24, round) != 1) { report(24); errors++; }
    if (check(25, round) != 0) { note(25); errors++; }
    if (check(26, round) != 0) { report(26); errors++; }
    if (check(27, round) != 1) { note(27); errors++; }
    if (check(28, round) != 0) { report(28); errors++; }
    if (check(29, round) != 0) { note(29); errors++; }
    if (check(30, round) != 1) { report(30); errors++; }
    if (check(31, round) != 0) { note(31); errors++; }
    if (check(32, round) != 0) { report(32); errors++; }
    if (check(33, round) != 1) { note(33); errors++; }
    if (check(34, round) != 0) { report(34); errors++; }
    if (check(35, round) != 0) { note(35); errors++; }
    if (check(36, round) != 1) { report(36); errors++; }
    if (check(37, round) != 0) { note(37); errors++; }
    if (check(38, round) != 0) { report(38); errors++; }
    if (check(39, round) != 1) { note(39); errors++; }
    if (check(40, round) != 0) { report(40); errors++; }
    if (check(41, round) != 0) { note(41); errors++; }
    if (check(42, round) != 1) { report(42); errors++; }
    if (check(43, round) != 0) { note(43); errors++; }
    if (check(44, round) != 0) { report(44); errors++; }
    if (check(45, round) != 1) { note(45); errors++; }
    if (check(46, round) != 0) { report(46); errors++; }
    if (check(47, round) != 0) { note(47); errors++; }
    if (check(48, round) != 1) { report(48); errors++; }
    if (check(49, round) != 0) { note(49); errors++; }
    if (check(50, round) != 0) { report(50); errors++; }
    if (check(51, round) != 1) { note(51); errors++; }
    if (check(52, round) != 0) { report(52); errors++; }
    if (check(53, round) != 0) { note(53); errors++; }
    if (check(54, round) != 1) { report(54); errors++; }
    if (check(55, round) != 0) { note(55); errors++; }
    if (check(56, round) != 0) { report(56); errors++; }
    if (check(57, round) != 1) { note(57); errors++; }
    if (check(58, round) != 0) { report(58); errors++; }
    if (check(59, round) != 0) { note(59); errors++; }
    if (check(60, round) != 1) { report(60); errors++; }
    if (check(61, round) != 0) { note(61); errors++; }
    if (check(62, round) != 0) { report(62); errors++; }
    if (check(63, round) != 1) { note(63); errors++; }
    return errors;
}
int main(void) {
    note = quiet;
    int total = 0;
    for (int round = 0; round < 10; round++) total += checks(round);
    printf("%d errors\n", total);
    return 0;
}
