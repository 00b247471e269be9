/* 8 threads x 250000 iterations on shared functions: 2,000,000 calls each of classify() and spin(), 3,000,000
 * inner-loop iterations, about 10 million counted events. Exact with --pathprof-atomic.
 * argv[1] = "leave": main returns while the threads still run (they never stop). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) void classify(long k) {
    if (k % 3 == 0)
        sink += 1; // expect: 666672
    else if (k % 3 == 1)
        sink += 2; // expect: 666664
    else
        sink += 3; // expect: 666664
}

__attribute__((noinline)) void spin(long k) {
    for (long j = 0; j < (k & 3); j++)
        sink ^= j; // expect: 3000000
}

static void *run(void *arg) {
    long forever = (long)arg;
    do {
        for (long k = 0; k < 250000; k++) {
            classify(k);
            spin(k);
        }
    } while (forever);
    return 0;
}

int main(int argc, char **argv) {
    pthread_t t[8];
    long leave = argc > 1 && !strcmp(argv[1], "leave");
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], 0, run, (void *)leave);
    if (leave) {
        usleep(50000);
        return 3;
    }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], 0);
    return 0;
}
