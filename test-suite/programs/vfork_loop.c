/* vfork() and posix_spawn() from inside a loop two calls below main (main -> run -> [function pointer]
 * spawn_in_loop), the shapes of fork_main.c: neither runs fork handlers, so nothing is zeroed and nothing is
 * resumed without having been entered — no fork re-entry anywhere, and one profile (the vfork child _exits,
 * the spawned /bin/true is not instrumented). The vfork child runs in the parent's memory until _exit: its
 * `if` branch and `_exit` are counted in the parent's profile, and vfork returning twice makes its block a
 * re-entry block (like setjmp): entered once, left twice per vfork. Hand-derived counts: main calls run twice,
 * each calls spawn_in_loop(4, 1, 2) (4 iterations, vfork at i = 1, posix_spawn at i = 2). The interprocedural
 * modes leave spawn_in_loop uninstrumented (it calls a returns_twice function).
 */
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile int sink;

int spawn_in_loop(int n, int vfork_at, int spawn_at) {
    for (int i = 0; i < n; i++) {
        sink += i; // expect: 8
        if (i == vfork_at) {
            pid_t pid = vfork(); // expect: 2
            if (pid == 0)
                _exit(0); // expect: 2
            waitpid(pid, 0, 0); // expect: 2
        }
        if (i == spawn_at) {
            pid_t pid;
            char *argv[] = {"true", 0};
            if (posix_spawn(&pid, "/bin/true", 0, 0, argv, environ) == 0) // expect: 2
                waitpid(pid, 0, 0); // expect: 2
        }
    }
    return 0;
}

typedef int (*task)(int, int, int);
task chosen = spawn_in_loop;

__attribute__((noinline)) static int run(task t) {
    int r = t(4, 1, 2); // expect: 2
    return r;
}

int main(void) {
    for (int round = 0; round < 2; round++)
        sink += run(chosen); // expect: 2
    return 0;
}
