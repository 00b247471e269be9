/* The HTML report's test program (test-suite/tests/report_html.rs): classify() has four paths, each taken a
 * different number of times by main's loop over x = 0..9, so each path is known by its count:
 *   x < 7 and even: 0 2 4 6 -> 4    x < 7 and odd: 1 3 5 -> 3    x >= 7 and even: 8 -> 1    x >= 7 and odd: 7 9 -> 2
 * Every statement has a line of its own. Counts derived by hand. */
#include <stdio.h>

__attribute__((noinline)) static int classify(int x) {
    int r = 0; // expect: 10
    if (x < 7)
        r += 1; // expect: 7
    else
        r += 10; // expect: 3
    if (x % 2 == 0)
        r += 100; // expect: 5
    return r;
}

int main(void) {
    int sum = 0; // expect: 1
    for (int i = 0; i < 10; i++)
        sum += classify(i); // expect: 10
    printf("%d\n", sum);
    return 0;
}
