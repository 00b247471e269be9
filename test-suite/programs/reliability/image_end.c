/* Ends its process image in the ways that run no atexit handlers, as argv[1] says; tick() counts its work
 * (odd and even arguments take different branches):
 *   fork-_exit   tick() 2 times, then a fork()ed child ticks 3 times and calls _exit(0) from leave();
 *                the parent waits and ticks once more: tick 6 (3 odd), leave 1.
 *   exec-self    tick() 5 times, then execv() of this program with "after", which ticks once and returns:
 *                two runs, main 2, tick 6 (2 odd).
 *   exec-fails   tick() 2 times, execv() of a file that does not exist (returns), 3 more: tick 5 (2 odd).
 *   _Exit        leave_quietly() ticks 4 times and calls _Exit(0): tick 4 (2 odd), leave_quietly 1.
 *   quick_exit   as _Exit, with quick_exit(0), after registering an at_quick_exit handler that ticks once
 *                more (odd): tick 5 (3 odd).
 *   daemon       tick() 2 times, daemon() (its parent _exits inside the C library), then the daemon ticks
 *                3 times and returns: two runs, tick 5 (2 odd), main 1 (resumed once by the forked child).
 *   handler      a SIGUSR1 handler calls _exit(0) from inside the loop's 3rd tick, which raised the signal:
 *                every activation it interrupted is at a call that may not return, so the counts are exact.
 * Exit status 0 in every case (the exec of a missing file must fail with ENOENT, errno kept). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) void tick(int i) {
    if (i & 1)
        sink += 1;
    else
        sink += 2;
    if (i == 102)
        raise(SIGUSR1);
}

__attribute__((noinline)) void leave(void) {
    tick(11);
    _exit(0);
}

static void on_quick_exit(void) {
    tick(9);
}

__attribute__((noinline)) void leave_quietly(int quick) {
    for (int i = 0; i < 4; i++)
        tick(i);
    if (quick && at_quick_exit(on_quick_exit) == 0)
        quick_exit(0);
    _Exit(0);
}

static void on_usr1(int sig) {
    (void)sig;
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 100;
    const char *how = argv[1];
    if (!strcmp(how, "after")) {
        tick(1);
        return 0;
    }
    if (!strcmp(how, "fork-_exit")) {
        tick(0);
        tick(1);
        pid_t pid = fork();
        if (pid == 0) {
            tick(3);
            tick(4);
            leave();
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 101;
        tick(6);
        return 0;
    }
    if (!strcmp(how, "exec-self") || !strcmp(how, "exec-fails")) {
        int self = !strcmp(how, "exec-self");
        for (int i = 0; i < (self ? 5 : 2); i++)
            tick(i);
        char *args[] = {argv[0], "after", 0};
        execv(self ? argv[0] : "/nonexistent/pathprof-image-end", args);
        if (self || errno != ENOENT)
            return 102;
        for (int i = 2; i < 5; i++)
            tick(i);
        return 0;
    }
    if (!strcmp(how, "_Exit") || !strcmp(how, "quick_exit"))
        leave_quietly(!strcmp(how, "quick_exit"));
    if (!strcmp(how, "daemon")) {
        tick(0);
        tick(1);
        if (daemon(1, 1) != 0) /* keeps the directory and stdout/stderr: the caller sees EOF at its exit */
            return 105;
        for (int i = 2; i < 5; i++)
            tick(i);
        return 0;
    }
    if (!strcmp(how, "handler")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, 0);
        for (int i = 100; i < 105; i++)
            tick(i);
        return 103;
    }
    return 104;
}
