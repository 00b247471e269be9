/* For PATHPROF_DUMP_INTERVAL: handle() runs 1000 times, the program prints "ready" and blocks reading stdin
 * (the interval timer writes the profile meanwhile); when stdin is closed it runs handle() 500 more times
 * and exits. */
#include <stdio.h>

static volatile long sink;

__attribute__((noinline)) void handle(long req) {
    if (req % 4 == 0)
        sink += req; // expect: 375
    else
        sink -= 1; // expect: 1125
}

int main(void) {
    for (long r = 0; r < 1000; r++)
        handle(r);
    printf("ready\n");
    fflush(stdout);
    while (getchar() != EOF) {
    }
    for (long r = 1000; r < 1500; r++)
        handle(r);
    return 0;
}
