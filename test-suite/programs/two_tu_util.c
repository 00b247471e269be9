/* clamp sees square(i) for i in [-50,50): values above 1000 for |i| >= 32: i in [-50,-32] (19) and [32,49] (18). */
__attribute__((noinline)) int square(int x) { return x * x; }
__attribute__((noinline)) int clamp(int x, int lo, int hi) {
    if (x < lo)
        return lo; // expect: 0
    if (x > hi)
        return hi; // expect: 37
    return x; // expect: 63
}
