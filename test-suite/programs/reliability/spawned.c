/* The program spawner.c starts: squares() runs atoi(argv[1]) times (7 in the tests); exits with status 7. */
#include <stdlib.h>

static volatile long sink;

__attribute__((noinline)) void squares(long i) {
    if (i % 2 == 0)
        sink += i * i; // expect: 4
    else
        sink -= i; // expect: 3
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 0;
    for (long i = 0; i < n; i++)
        squares(i);
    return 7;
}
