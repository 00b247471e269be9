/* Instrumented in edge mode (CMakeLists.txt). Prints "302 15": 4 calls × 4 multiples = 16, doubled by the
 * uninstrumented plain_twice to 32, which scale() turns into 3 × 100 + 2; 1 + 2 + 3 + 4 + 5 = 15. */
#include <stdio.h>
#include "example.h"

int scale(int x);
int triangle(int n);

int main(void) {
    int total = 0;                              // expect: 1
    for (int r = 0; r < 4; r++) {
        total += count_multiples(10, 3);        // expect: 4
    }
    total = plain_twice(total);                 // expect: 1
    printf("%d %d\n", scale(total), triangle(5));
    return 0;
}
