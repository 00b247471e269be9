// Recursion and mutual recursion for interprocedural path profiling. Hand-derived (context mode): fact(3)
// from main is followed into fact; fact's call to itself is recursive (a summary edge), so fact(2) and fact(1)
// are activations profiled as paths of their own. is_even/is_odd call each other: the call-graph DFS makes
// is_odd's call back to is_even the recursive site.
#include <stdio.h>

static int fact(int n) {
    if (n <= 1)        // expect: 3
        return 1;      // expect: 1
    return n * fact(n - 1);
}

static int is_odd(int n);

static int is_even(int n) {
    if (n == 0)        // expect: 3
        return 1;      // expect: 1
    return is_odd(n - 1);
}

static int is_odd(int n) {
    if (n == 0)        // expect: 2
        return 0;
    return is_even(n - 1);
}

int main(void) {
    int f = fact(3);
    int e = is_even(4);
    printf("%d %d\n", f, e);
    return 0;
}
