/* _Fork (glibc 2.34): a fork that runs no pthread_atfork handlers. The child runs child_work(10) and exits;
 * the parent runs parent_work() and waits. True counts: main entered once (the child resumes the parent's
 * activation: a fork re-entry, not an entry), child_work 1 with 10 iterations, parent_work 1. Exit status 0;
 * the child's status 7 is checked. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static void child_work(int n) {
  for (int i = 0; i < n; i++)
    sink += i;
}

__attribute__((noinline)) static void parent_work(void) { sink += 1; }

int main(void) {
  pid_t p = _Fork();
  if (p < 0)
    return 2;
  if (p == 0) {
    child_work(10);
    exit(7);
  }
  parent_work();
  int status = 0;
  if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
    return 3;
  return 0;
}
