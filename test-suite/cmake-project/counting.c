/* Instrumented in path mode with atomic counters (CMakeLists.txt). Expected counts: app's run, which calls
 * count_multiples(10, 3) four times; each call runs the loop body 10 times, 4 of them (i = 0, 3, 6, 9) with
 * i % 3 == 0. */
#include "example.h"

int count_multiples(int n, int k) {
    int c = 0;                      // expect: 4
    for (int i = 0; i < n; i++) {
        if (i % k == 0) {           // expect: 40
            c++;                    // expect: 16
        }
    }
    return c;                       // expect: 4
}
