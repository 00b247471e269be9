/* fork() under a try block: the child throws, and the exception lands in the catch of an activation that was
 * in flight at the fork (middle's invoke of spawn). Hand-derived: the parent waits and returns 0 through
 * middle and main; the child resumes spawn after fork() (a re-entry), throws out of it (spawn's one abnormal
 * exit), resumes middle in its landing pad (a re-entry of the invoke's block), catches, returns 7, and main
 * (a re-entry after its call) adds 100. "child:" = the child's own profile, "expect:" = merged.
 */
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

struct Guard {
    ~Guard() { sink += 10; } /* child: 1 */ // expect: 2
};

__attribute__((noinline)) int spawn() {
    pid_t pid = fork(); /* child: 1 */ // expect: 2
    if (pid == 0)
        throw 1; /* child: 1 */ // expect: 1
    waitpid(pid, 0, 0); /* child: 0 */ // expect: 1
    return 0;
}

__attribute__((noinline)) int middle() {
    Guard g;
    try {
        return spawn(); /* child: 1 */ // expect: 2
    } catch (int) {
        sink += 1; /* child: 1 */ // expect: 1
        return 7;
    }
}

int main() {
    int r = middle(); /* child: 1 */ // expect: 2
    if (r == 7)
        sink += 100; /* child: 1 */ // expect: 1
    return 0;
}
