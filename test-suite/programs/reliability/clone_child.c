/* clone(): the C library's wrapper runs no fork handlers, and a child without CLONE_VM ends, when its function
 * returns, with the exit system call, which runs no atexit handler. Modes (argv[1]):
 *   return: the child runs child_work(10) and returns 7;
 *   exit:   the child runs child_work(10) and calls exit(7) (atexit handlers run in the child);
 *   vm:     CLONE_VM: the child shares the parent's memory (and counters), runs child_work(10), returns 7.
 * The child's stack is 4 KiB above a guard page, as much as the plain build needs and then some: the runtime's
 * own work in the child (its fork handlers, the write at the end) must not take it.
 * The parent waits for the child (status 7 checked), then runs parent_work(). True counts in every mode: main
 * entered once (the child never resumes it: it starts in child_main), child_main 1, child_work 1 with 10
 * iterations, parent_work 1. Exit status 0. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static void child_work(int n) {
  for (int i = 0; i < n; i++)
    sink += i;
}

__attribute__((noinline)) static void parent_work(void) { sink += 1; }

static int child_main(void *how) {
  child_work(10);
  if (strcmp(how, "exit") == 0)
    exit(7);
  return 7;
}

int main(int argc, char **argv) {
  char *how = argc > 1 ? argv[1] : "return";
  int flags = SIGCHLD | (strcmp(how, "vm") == 0 ? CLONE_VM : 0);
  char *stack = mmap(0, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (stack == MAP_FAILED || mprotect(stack, 4096, PROT_NONE) != 0)
    return 4;
  pid_t p = clone(child_main, stack + 2 * 4096, flags, how);
  if (p < 0)
    return 2;
  int status = 0;
  if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
    return 3;
  parent_work();
  return 0;
}
