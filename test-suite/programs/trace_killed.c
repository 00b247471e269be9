/* Killed before it wrote anything: SIGKILL leaves no handler a chance, so the trace file holds its module
 * and no thread. */
#include <signal.h>
#include <unistd.h>

static volatile int sink;

int main(void) {
  for (int i = 0; i < 100; i++)
    sink += i;
  kill(getpid(), SIGKILL);
  return 0;
}
