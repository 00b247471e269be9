/* fork() meets setjmp/longjmp: the child of a fork() inside forker() longjmps back into main, whose activation
 * was in flight at the fork, and main then makes a call that may fork (through a function pointer), which is
 * checked. The child resumes main through its setjmp, not by a return from forker(): main gets no fork
 * re-entry in either process; forker gets one in the child (its fork() returned there).
 *
 * Counts per process (derived by hand): the parent runs everything once; the child's counters start at zero
 * at the fork, it runs the rest of forker's fork block, the child branch, and main from its setjmp on.
 * "child:" is the child's own profile (%p), "expect:" the merged file's block counts.
 */
#include <setjmp.h>
#include <sys/wait.h>
#include <unistd.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) static void forker(void) {
    pid_t pid = fork(); /* child: 1 */ // expect: 2
    if (pid == 0) {
        sink = 1; /* child: 1 */ // expect: 1
        longjmp(env, 1);
    }
    waitpid(pid, 0, 0); /* child: 0 */ // expect: 1
}

static int twice(int x) {
    return 2 * x; /* child: 1 */ // expect: 2
}

int (*volatile op)(int) = twice;

int main(void) {
    int n = 1;
    if (setjmp(env) == 0)
        forker(); /* child: 0 */ // expect: 1
    n = op(n);
    sink += n; /* child: 1 */ // expect: 2
    return 0;
}
