/* Not instrumented; links the instrumented static library, so the runtime comes with it. count_multiples(7, 2)
 * runs the loop body 7 times, 4 of them (i = 0, 2, 4, 6) counting. */
#include <stdio.h>
#include "example.h"

int main(void) {
    printf("%d\n", count_multiples(7, 2));
    return 0;
}
