/* fork() from inside a loop two calls below main, through a function pointer and a shared object:
 * main -> run (direct) -> spawn_in_loop (through `task`, in fork_lib.c's shared object) -> fork().
 *
 * Round 1 forks (fork_at = 2, see fork_lib.c): the parent waits, finishes that round and round 2; the child
 * returns 1 through run into main, which does the child's work (child_work(5)) and returns. Hand-derived counts:
 * parent: main's loop test runs 4 times, its body 3 times (run called 3 times, each returns 0), `sink += round`
 * 3 times. child: resumes run after its indirect call (a re-entry) and main after its call of run (a re-entry),
 * takes the `if` branch once, child_work loops 5 times. "child:" = the child's own profile, "expect:" = merged.
 */
static volatile int sink;

typedef int (*task)(int, int);
int spawn_in_loop(int n, int fork_at);

__attribute__((noinline)) static int run(task t, int n, int fork_at) {
    int r = t(n, fork_at); /* child: 1 */ // expect: 4
    return r;
}

__attribute__((noinline)) static void child_work(int k) {
    for (int j = 0; j < k; j++)
        sink += j; /* child: 5 */ // expect: 5
}

task chosen = spawn_in_loop;

int main(void) {
    task t = chosen;
    for (int round = 0; round < 3; round++) {
        if (run(t, 3 + round, (round == 1) * 3 - 1)) { /* child: 1 */ // expect: 4
            child_work(5); /* child: 1 */ // expect: 1
            return 0;
        }
        sink += round; /* child: 0 */ // expect: 3
    }
    return 0;
}
