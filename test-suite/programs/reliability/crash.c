/* Abnormal ends. work() runs 100 times and returns every time; then main ends as argv[1] says:
 *   exit  - returns normally            segv  - writes through a null pointer (SIGSEGV)
 *   abort - abort() (SIGABRT)            bus   - reads a mapping past the end of its file (SIGBUS)
 *   ill   - __builtin_trap() (SIGILL)    fpe   - integer division by zero (SIGFPE)
 *   term  - prints "ready", then waits for SIGTERM from another process
 *   term-dumping - prints "ready", then calls __pathprof_dump() in a loop until SIGTERM arrives
 *   segv-dumping - a second thread calls __pathprof_dump() in a loop while main faults
 *   overflow - unbounded recursion on a thread with an alternate signal stack (SIGSEGV on stack overflow)
 *   _exit - _exit(7): no exit handlers, but the runtime writes the profile right before the call
 * work()'s counts are exact whenever a profile is written (every call completed); main's frame is in flight
 * when the program dies, so its counts are a lower bound. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pathprof.h"

static volatile int sink;

__attribute__((noinline)) void work(int i) {
    if (i % 3 == 0)
        sink += 1; // expect: 34
    else
        sink += 2; // expect: 66
}

__attribute__((noinline)) int recurse(volatile char *prev) {
    volatile char frame[256];
    frame[0] = prev ? prev[0] + 1 : 0;
    return recurse(frame) + frame[1];
}

static void *dump_forever(void *arg) {
    (void)arg;
    for (;;)
        __pathprof_dump();
    return 0;
}

int main(int argc, char **argv) {
    for (int i = 0; i < 100; i++)
        work(i);
    const char *how = argc > 1 ? argv[1] : "exit";
    /* Opaque to the optimiser: null / zero at run time. */
    volatile int *null = (volatile int *)getenv("PATHPROF_TEST_NEVER_SET");
    volatile int zero = 0;
    if (!strcmp(how, "segv")) {
        *null = 1;
    } else if (!strcmp(how, "abort")) {
        abort();
    } else if (!strcmp(how, "bus")) {
        FILE *f = tmpfile();
        char *p = mmap(0, 4096, PROT_READ, MAP_SHARED, fileno(f), 0);
        sink = p[0];
    } else if (!strcmp(how, "ill")) {
        __builtin_trap();
    } else if (!strcmp(how, "fpe")) {
        sink = 100 / zero;
    } else if (!strcmp(how, "term")) {
        printf("ready\n");
        fflush(stdout);
        for (;;)
            pause();
    } else if (!strcmp(how, "term-dumping")) {
        printf("ready\n");
        fflush(stdout);
        for (;;)
            __pathprof_dump();
    } else if (!strcmp(how, "segv-dumping")) {
        pthread_t t;
        pthread_create(&t, 0, dump_forever, 0);
        usleep(20000);
        *null = 1;
    } else if (!strcmp(how, "overflow")) {
        static char altstack[256 * 1024];
        stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
        sigaltstack(&ss, 0);
        sink = recurse(0);
    } else if (!strcmp(how, "_exit")) {
        _exit(7);
    }
    return 0;
}
