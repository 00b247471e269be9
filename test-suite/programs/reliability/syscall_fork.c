/* A fork through syscall(2), which runs no pthread_atfork handlers (argv[1]): `fork` (SYS_fork), `clone`
 * (SYS_clone with SIGCHLD and no CLONE_VM) or `clone3` (SYS_clone3, the same as a struct clone_args). The child
 * runs child_work(10) and exits 7; the parent checks that a system call that forks nothing passes through
 * (syscall(SYS_getpid) == getpid()), runs parent_work() and waits. True counts: main entered once (the child
 * resumes the parent's activation: a fork re-entry, not an entry), child_work 1 with 10 iterations,
 * parent_work 1. Exit status 0; 4 if the kernel has no clone3. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <errno.h>

static volatile long sink;

__attribute__((noinline)) static void child_work(int n) {
  for (int i = 0; i < n; i++)
    sink += i;
}

__attribute__((noinline)) static void parent_work(void) { sink += 1; }

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "fork";
  long p;
  if (!strcmp(how, "clone")) {
    p = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  } else if (!strcmp(how, "clone3")) {
    uint64_t args[8] = {0};
    args[4] = SIGCHLD; /* exit_signal */
    p = syscall(SYS_clone3, args, sizeof args);
    if (p < 0 && errno == ENOSYS)
      return 4;
  } else {
    p = syscall(SYS_fork);
  }
  if (p < 0)
    return 2;
  if (p == 0) {
    child_work(10);
    exit(7);
  }
  if (syscall(SYS_getpid) != getpid())
    return 5;
  parent_work();
  int status = 0;
  if (waitpid((pid_t)p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
    return 3;
  return 0;
}
