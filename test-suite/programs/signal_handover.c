/* A thread signals the main thread 200,000 times while main calls work() 20 M times; the handler calls work()
 * too. In the interprocedural modes a signal can land between main handing its path number to work() and work()
 * reading it, or between work() handing its path back and main reading it: the handler's own calls of work()
 * would overwrite that hand-over (libuv's fs_partial_read does this to itself). Counts: main's loop body runs
 * 20 M times whatever the handler does; work() runs 20 M times plus 100 per handler run. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

static volatile unsigned long sink;
static volatile int go = 1;

__attribute__((noinline)) static void work(unsigned long i) {
    if (i % 3 == 0)
        sink += i;
    else if (i % 5 == 0)
        sink -= i;
    else
        sink ^= i;
}

static void handler(int sig) {
    (void)sig;
    for (unsigned long i = 0; i < 100; i++)
        work(i);
}

static void *killer(void *arg) {
    pthread_t main_thread = *(pthread_t *)arg;
    for (int i = 0; i < 200000 && go; i++)
        pthread_kill(main_thread, SIGUSR1);
    return 0;
}

int main(void) {
    pthread_t self = pthread_self(), t;
    signal(SIGUSR1, handler);
    pthread_create(&t, 0, killer, &self);
    for (unsigned long i = 0; i < 20000000; i++)
        work(i); // expect: 20000000
    go = 0;
    pthread_join(t, 0);
    printf("%lu\n", sink);
    return 0;
}
