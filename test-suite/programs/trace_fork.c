/* Trace mode: fork() in the middle of a call; the child works and exits from a callee, the parent waits and
 * works on. Each process writes its own trace (%p). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static long work(long n) {
  long s = 0;
  for (long i = 0; i < n; i++)
    s += (i % 3 == 0) ? i : 1;
  return s;
}
static void child(long a) {
  if (work(50) + a > 0)
    exit(0);
}
static int run(void) {
  long a = work(100);
  pid_t p = fork();
  if (p == 0)
    child(a);
  int st = 0;
  waitpid(p, &st, 0);
  return WEXITSTATUS(st) + (int)(work(10) & 1);
}
int main(void) { return run(); }
