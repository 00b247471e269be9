/* Handlers that do not return. After a signal the thread sent itself from a call, every instrumented
 * activation is at a call that may not return in the pass's graphs, so the counts stay exact; after a fault
 * they must be flagged. The argument picks the case:
 *   raise:  poke(i) raises SIGUSR1 for odd i; the handler siglongjmps back to main (i = 1, 3: two escapes);
 *   abort:  fail() calls abort(); the SIGABRT handler exits (MPFR's and libsodium's abort tests);
 *   memcpy: copy() hands memcpy a bad destination twice; the SIGSEGV handler siglongjmps out of the C library,
 *           leaving copy at a call the pass counts as one that returns: flagged;
 *   fault:  a store through a bad pointer in instrumented code itself, left mid-block: flagged.
 * Prints what it did. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sigjmp_buf back;
static volatile size_t len = 64;
static char buf[64];

static void on_signal(int sig) {
  (void)sig;
  siglongjmp(back, 1);
}

static void on_abort(int sig) {
  (void)sig;
  printf("aborted\n");
  exit(0);
}

static int poke(int i) {
  if (i & 1)
    raise(SIGUSR1);
  return i;
}

static void copy(char *to) { memcpy(to, buf, len); }

static void fail(void) { abort(); }

static void store(int *p) { *p = 1; }

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  int escapes = 0, sum = 0;
  signal(SIGUSR1, on_signal);
  signal(SIGSEGV, on_signal);
  signal(SIGABRT, on_abort);
  for (int i = 0; i < 5; i++) {
    if (sigsetjmp(back, 1) != 0) {
      escapes++;
      continue;
    }
    if (strcmp(what, "raise") == 0)
      sum += poke(i);
    else if (strcmp(what, "memcpy") == 0 && i < 2)
      copy((char *)(sizeof buf * (i + 1)));
    else if (strcmp(what, "abort") == 0 && i == 4)
      fail();
    else if (strcmp(what, "fault") == 0 && i == 0)
      store((int *)16);
  }
  printf("%s escapes %d sum %d\n", what, escapes, sum);
  return 0;
}
