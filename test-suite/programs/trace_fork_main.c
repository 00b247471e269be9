/* Trace mode: main forks first thing, before its thread has written a whole word of trace; the child works
 * and exits. The child writes its own trace (%p) only at its end, after the module destructor has unlisted
 * the module: its file had no module metadata ("activation of unknown function 0"). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile long sink;
static void work(int n) {
  for (int i = 0; i < n; i++)
    sink += (i % 3 == 0) ? i : 1;
}
int main(void) {
  pid_t p = fork();
  if (p == 0) {
    work(10);
    exit(0);
  }
  int st = 0;
  waitpid(p, &st, 0);
  return WEXITSTATUS(st);
}
