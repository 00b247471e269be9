/* Loops whose back edges end one or two paths per iteration, the shapes path-mode promotion tests for
 * (pathprof_core::promoted_paths): the tested paths and the ones that miss (first iterations, a rare branch, a
 * body with more paths than are tested), two back edges to one header (`continue`), a do-while, a loop left by
 * `break` and one left by `return`, and a nest. Counts derived by hand for the calls in main. */
#include <stdio.h>

__attribute__((noinline)) long two_paths(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (i % 3 == 0)
            s += 2; // expect: 34
        else
            s += 1; // expect: 66
    }
    return s;
}

__attribute__((noinline)) long four_paths(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (i & 1)
            s += i; // expect: 50
        if (i & 2)
            s -= 1; // expect: 50
    }
    return s;
}

__attribute__((noinline)) int with_continue(int n) {
    int odd = 0;
    for (int i = 0; i < n; i++) {
        if (i & 1) {
            odd++; // expect: 50
            continue;
        }
        odd += 2; // expect: 50
    }
    return odd;
}

__attribute__((noinline)) int do_while(int n) {
    int steps = 0;
    do {
        n = n % 2 ? 3 * n + 1 : n / 2;
        steps++; // expect: 111
    } while (n != 1);
    return steps;
}

__attribute__((noinline)) int find(const int *a, int n, int key) {
    for (int i = 0; i < n; i++)
        if (a[i] == key)
            return i; // expect: 1
    return -1; // expect: 1
}

__attribute__((noinline)) int until_zero(const int *a) {
    int i = 0;
    while (1) {
        if (a[i] == 0)
            break;
        i++; // expect: 7
    }
    return i;
}

__attribute__((noinline)) long nest(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            s += j; // expect: 45
        }
        s++; // expect: 10
    }
    return s;
}

int main(void) {
    int a[10] = {5, 4, 3, 2, 1, 6, 7, 0, 9, 8};
    long r = two_paths(100) + four_paths(100) + with_continue(100) + do_while(27) + nest(10);
    r += find(a, 10, 3) + find(a, 10, 42) + until_zero(a);
    printf("%ld\n", r);
    return 0;
}
