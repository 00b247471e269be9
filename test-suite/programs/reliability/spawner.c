/* Starts the instrumented program argv[2] (with argument "7") as argv[1] says: "fork-exec", "vfork-exec",
 * "vfork-exit" (the vfork child calls _exit without exec'ing), or "posix_spawn"; waits for it; exits with
 * its status. count() runs 10 times before and 5 times after the child. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile int sink;

__attribute__((noinline)) void count(int i) {
    if (i & 1)
        sink += 1; // expect: 7
    else
        sink += 2; // expect: 8
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 100;
    for (int i = 0; i < 10; i++)
        count(i);
    char *child_argv[] = {argv[2], "7", 0};
    pid_t pid = -1;
    if (!strcmp(argv[1], "fork-exec")) {
        pid = fork();
        if (pid == 0) {
            execv(argv[2], child_argv);
            _exit(127);
        }
    } else if (!strcmp(argv[1], "vfork-exec")) {
        pid = vfork();
        if (pid == 0) {
            execv(argv[2], child_argv);
            _exit(127);
        }
    } else if (!strcmp(argv[1], "vfork-exit")) {
        pid = vfork();
        if (pid == 0)
            _exit(7);
    } else if (!strcmp(argv[1], "posix_spawn")) {
        if (posix_spawn(&pid, argv[2], 0, 0, child_argv, environ) != 0)
            return 101;
    }
    if (pid < 0)
        return 102;
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return 103;
    for (int i = 10; i < 15; i++)
        count(i);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 104;
}
