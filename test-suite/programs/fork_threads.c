/* fork() while other threads are in the middle of calls: only the forking thread exists in the child, so only
 * its activations are resumed there (one fork re-entry each); the workers' in-flight calls go on in the parent
 * only. Built with --pathprof-atomic. Hand-derived: 2 workers × 1000 calls of step() (parent only); the forking
 * thread (main) calls spawn() through run(): the child returns 1 and does child_work(3); the parent waits.
 */
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;
static volatile int started;

__attribute__((noinline)) void step(int i) {
    if (i % 4 == 0)
        sink += 1; // expect: 500
    else
        sink += 2; // expect: 1500
}

__attribute__((noinline)) void *worker(void *arg) {
    (void)arg;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 1000; i++)
        step(i); // expect: 2000
    return 0;
}

__attribute__((noinline)) int spawn(void) {
    pid_t pid = fork(); // expect: 2
    if (pid == 0)
        return 1; // expect: 1
    waitpid(pid, 0, 0); // expect: 1
    return 0;
}

__attribute__((noinline)) int run(void) {
    int r = spawn(); // expect: 2
    return r;
}

__attribute__((noinline)) void child_work(int k) {
    for (int j = 0; j < k; j++)
        sink += j; // expect: 3
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], 0, worker, 0);
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 2)
        sched_yield();
    if (run()) { // expect: 2
        child_work(3); // expect: 1
        return 0; // the child: no workers here; exit writes its profile
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], 0); // expect: 2
    return 0;
}
