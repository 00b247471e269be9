/* 4 threads x 100000 calls of work(k): k odd for half of them. Exact only with atomic counters. */
#include <pthread.h>
static volatile long sink;
__attribute__((noinline)) void work(int k) {
    if (k & 1)
        sink += 1; // expect: 200000
    else
        sink += 2; // expect: 200000
}
static void *run(void *arg) {
    (void)arg;
    for (int k = 0; k < 100000; k++)
        work(k); // expect: 400000
    return 0;
}

int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], 0, run, 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], 0);
    return 0;
}
