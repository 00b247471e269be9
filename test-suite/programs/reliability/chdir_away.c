/* Moves away from the directory it was started in: work() runs 6 times (3 odd), then the program chdir()s to
 * argv[1]; with argv[2] = "fork" a fork()ed child runs work() twice more (1 odd) and exits before the parent
 * does; with argv[2] = "clearenv" the program empties its environment. Relative profile and trace names must
 * still be resolved against the start directory, and PATHPROF_FILE/PATHPROF_TRACE read as they were at start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) void work(int i) {
    if (i & 1)
        sink += 1;
    else
        sink += 2;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 100;
    for (int i = 0; i < 6; i++)
        work(i);
    if (chdir(argv[1]) != 0)
        return 101;
    if (argc > 2 && !strcmp(argv[2], "clearenv") && clearenv() != 0)
        return 103;
    if (argc > 2 && !strcmp(argv[2], "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            work(6);
            work(7);
            return 0;
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 102;
    }
    return 0;
}
