/* See ctor_early_main.c. */
static volatile int sink;

int helper(int x) {
    if (x & 1)
        sink++; // expect: 1
    return x * 2; // expect: 2
}
