/* The shared object of fork_main.c: a loop that fork()s on iteration `fork_at`.
 *
 * Counts per process (derived by hand; main.c calls spawn_in_loop(3, -1), (4, 2) and (5, -1) in the parent):
 * parent: 3 calls, 3 + 4 + 5 = 12 iterations, one fork() at i = 2 of the second call, after which the parent
 * waits and finishes its loop. child: its counters start at zero at the fork; it resumes this activation after
 * fork() returned (one re-entry of the fork block), sets child = 1, breaks out and returns.
 * Merged = parent + child; "child:" is the child's own profile (%p), "expect:" the merged file's block counts
 * (a block's count includes its fork re-entries: the rest of the block ran in both processes).
 */
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

int spawn_in_loop(int n, int fork_at) {
    int child = 0;
    for (int i = 0; i < n; i++) {
        sink += i; /* child: 0 */ // expect: 12
        if (i == fork_at) {
            pid_t pid = fork(); /* child: 1 */ // expect: 2
            if (pid == 0) {
                child = 1; /* child: 1 */ // expect: 1
                break;
            }
            waitpid(pid, 0, 0); /* child: 0 */ // expect: 1
        }
        sink -= 1; /* child: 0 */ // expect: 12
    }
    return child; /* child: 1 */ // expect: 4
}
