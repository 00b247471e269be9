/* Loops that only count, and a sieve: with counter promotion (edge mode) their counters live in registers, so
 * the optimiser folds the nest to closed form as in the plain build (LLVM's IR PGO does the same); the counts
 * stay exact. Hand-derived: nest(20) runs its innermost statement 20^3 = 8000 times; the sieve below 100 finds
 * 25 primes and crosses off the multiples of 2, 3, 5 and 7 from their squares up: 48 + 31 + 15 + 8 = 102
 * stores. */
#include <stdio.h>

__attribute__((noinline)) long nest(int n) {
    long s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < n; k++)
                s++; // expect: 8000
    return s;
}

__attribute__((noinline)) int sieve(char *crossed, int n) {
    int primes = 0;
    for (int i = 2; i < n; i++) {
        if (crossed[i])
            continue;
        primes++; // expect: 25
        for (int j = i * i; j < n; j += i)
            crossed[j] = 1; // expect: 102
    }
    return primes;
}

int main(void) {
    static char crossed[100];
    long s = nest(20);
    int p = sieve(crossed, 100);
    printf("%ld %d\n", s, p);
    return s == 8000 && p == 25 ? 0 : 1;
}
