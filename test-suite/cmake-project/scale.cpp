// C++ source of the edge-mode executable: with x = 32 the loop body runs 3 times (32 → 22 → 12 → 2).
extern "C" int scale(int x) {
    int tens = 0;                   // expect: 1
    while (x > 10) {
        x -= 10;                    // expect: 3
        tens++;
    }
    return tens * 100 + x;          // expect: 1
}
