// Functions that call only themselves (interprocedural modes: their returns count and hand back before the
// recursive calls that end them, so that LLVM can turn the last call into a loop). Each shape below returns
// through recursive calls in another way; main goes on branching on what they return, so a path number handed
// back wrong would show in main's counts. Counts are compared with edge mode's (tests/interproc.rs).
#include <stdio.h>

// Two recursive calls, the second in tail position under an accumulator (announced from main and root
// activations from itself).
__attribute__((noinline)) long fib(long n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

// Tail calls only, from two returns.
static long ackermann(long m, long n) {
    if (m == 0)
        return n + 1;
    if (n == 0)
        return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

// A loop before the recursive calls, whose result joins in the return block (a PHI fed by two calls).
static int depth_sum(const int *tree, int size, int i) {
    if (i >= size)
        return 0;
    int weight = 0;
    for (int k = tree[i]; k > 0; k /= 2)
        weight += k & 1;
    return tree[i] % 3 == 0 ? weight + depth_sum(tree, size, 2 * i + 1)
                            : weight + depth_sum(tree, size, 2 * i + 2) + depth_sum(tree, size, 2 * i + 1);
}

// Several returns from a switch, each after its own recursive call.
static unsigned collatz_steps(unsigned long x, unsigned steps) {
    switch (x % 4) {
    case 0:
        return x == 0 ? steps : collatz_steps(x / 4, steps + 2);
    case 2:
        return collatz_steps(x / 2, steps + 1);
    default:
        if (x == 1)
            return steps;
        return collatz_steps(3 * x + 1, steps + 1);
    }
}

// Entered through a pointer as well as directly.
static long (*volatile through_pointer)(long) = fib;

int main(void) {
    int tree[40];
    for (int i = 0; i < 40; i++)
        tree[i] = (i * 7 + 3) % 23;
    long total = 0;
    for (int round = 0; round < 6; round++) {
        long f = fib(round + 8);
        if (f % 2)
            total += f;
        else
            total -= f / 2;
        long a = ackermann(round % 3, round + 1);
        if (a > 5)
            total += a;
        int d = depth_sum(tree, 40 - round, round % 2);
        if (d % 3 == 1)
            total ^= d;
        unsigned c = collatz_steps(27 + round * 10, 0);
        if (c > 40)
            total += c;
        long p = through_pointer(round + 5);
        total += p > 10 ? p : -p;
    }
    printf("%ld\n", total);
    return 0;
}
