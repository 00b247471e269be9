/* A shared library: classify(i) for i in [0,30): multiples of 3 (10 of them) vs the rest (20). */
__attribute__((noinline)) int classify(int i) {
    if (i % 3 == 0)
        return 1; // expect: 10
    return 2; // expect: 20
}
