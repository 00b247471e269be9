/* Trace mode: forks after each process has written trace data to its file (more than a runtime buffer of
 * bits), in the middle of calls: main churns, forks a child inside spawn(); the child churns on, forks a
 * grandchild inside spawn() in turn, and each waits for its own child. A child's stream starts with what its
 * parent (and grandparent) had written before the fork. Each process writes its own trace (%p).
 * argv[1]: churn iterations before each fork (a decision and a call per iteration). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static unsigned long state = 1;
__attribute__((noinline)) static int coin(void) {
  state = state * 6364136223846793005UL + 1442695040888963407UL;
  return (int)((state >> 33) & 1);
}
static long sum;
__attribute__((noinline)) static void heads(long i) { sum += i; }
__attribute__((noinline)) static void tails(long i) { sum ^= i; }
static void churn(long n) {
  for (long i = 0; i < n; i++) {
    if (coin())
      heads(i);
    else
      tails(i);
  }
}
static int spawn(long n, int generations);
static int live(long n, int generations) {
  churn(n);
  return generations > 0 ? spawn(n, generations - 1) : (int)(sum & 1);
}
static int spawn(long n, int generations) {
  pid_t p = fork();
  if (p == 0)
    exit(live(n, generations));
  int st = 0;
  waitpid(p, &st, 0);
  churn(10);
  return WEXITSTATUS(st);
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  return live(n, 2);
}
