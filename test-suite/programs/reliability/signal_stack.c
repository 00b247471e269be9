/* A signal handler must run on the stack the program gave the thread, as in the plain build: collectors and
 * profilers record the stack pointer a handler sees (the Boehm collector's suspend handler, which the collector
 * then scans up to the thread's stack top). The main thread dumps its profile over and over (the runtime
 * writes on a stack of its own) and runs a loop with many branches (trace mode flushes its buffer on that
 * stack), while a second thread sends it SIGUSR1 as fast as it can. The handler checks that its own frame lies
 * within the main thread's stack. Prints "handled N, off the thread's stack M"; M must be 0. argv[1]: rounds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int __pathprof_dump(void) __attribute__((weak));

static uintptr_t stack_lo, stack_hi;
static volatile long handled, off_stack;
static volatile int done;
static pthread_t main_thread;
static volatile unsigned long sink;

static void on_usr1(int sig) {
    volatile char here = (char)sig;
    uintptr_t at = (uintptr_t)&here;
    handled++;
    if (at < stack_lo || at >= stack_hi)
        off_stack++;
}

static void *pester(void *arg) {
    (void)arg;
    while (!done)
        pthread_kill(main_thread, SIGUSR1);
    return NULL;
}

static void busy(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) {
        if ((i * 2654435761u) & 64)
            sink += i;
        else
            sink ^= i;
    }
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    pthread_attr_t attr;
    void *lo;
    size_t size;
    main_thread = pthread_self();
    if (pthread_getattr_np(main_thread, &attr) != 0 || pthread_attr_getstack(&attr, &lo, &size) != 0)
        return 3;
    stack_lo = (uintptr_t)lo;
    stack_hi = stack_lo + size;
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, pester, NULL) != 0)
        return 4;
    while (handled == 0)
        ; /* the pester is running */
    for (int r = 0; r < rounds; r++) {
        busy(20000);
        if (__pathprof_dump)
            __pathprof_dump();
    }
    done = 1;
    pthread_join(t, NULL);
    printf("handled %ld, off the thread's stack %ld\n", handled, off_stack);
    return off_stack != 0;
}
