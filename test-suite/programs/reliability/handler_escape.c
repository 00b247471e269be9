/* Signal handlers that return and one that does not. With an argument, the SIGSEGV handler (on an alternate
 * stack, installed with sigaction) siglongjmps out of a recursion that overflows the stack, twice, as gnulib's
 * c-stack tests do: the activations it interrupts are left mid-block, where no counter accounts for them, so
 * the counts must be flagged. Without an argument only SIGUSR1's handler runs (installed with signal(), raised
 * three times, then once more with SA_RESETHAND), and it returns: the counts are exact. Checks on the way that
 * the program sees its own handlers and flags as the old actions (not the runtime's trampoline and its
 * SA_SIGINFO), also inside a handler and after SA_RESETHAND's reset, as gnulib's test-sigaction does. Prints
 * what it did. */
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static sigjmp_buf back;
static char altstack[1 << 16];
static volatile int usr1;

static void on_segv(int sig) {
  (void)sig;
  siglongjmp(back, 1);
}

static volatile int seen_wrong;

static void on_usr1(int sig) {
  /* Inside the handler, the action is still the program's: its handler, no SA_SIGINFO (gnulib's test-sigaction). */
  struct sigaction now;
  if (sigaction(sig, 0, &now) != 0 || (now.sa_flags & SA_SIGINFO) || (now.sa_handler != on_usr1 && now.sa_handler != SIG_DFL))
    seen_wrong = 1;
  usr1++;
}

static void on_usr2(int sig, siginfo_t *info, void *context) {
  (void)sig, (void)info, (void)context;
  usr1 += 100;
}

static volatile int *recurse_1(int n, volatile int *p) {
  if (n < INT_MAX)
    *recurse_1(n + 1, p) += n;
  return p;
}

static int recurse(volatile int n) { return *recurse_1(n, &n); }

int main(int argc, char **argv) {
  if (signal(SIGUSR1, on_usr1) == SIG_ERR || signal(SIGUSR1, on_usr1) != on_usr1)
    return 10; /* signal() returns the previous handler: the program's own */
  for (int i = 0; i < 3; i++)
    raise(SIGUSR1);
  struct sigaction sa = {0}, old = {0};
  sa.sa_sigaction = on_usr2;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  if (sigaction(SIGUSR2, &sa, 0) != 0 || sigaction(SIGUSR2, 0, &old) != 0 || old.sa_sigaction != on_usr2)
    return 11;
  raise(SIGUSR2); /* runs on_usr2 once, and the kernel resets SIGUSR2 to SIG_DFL */
  if (sigaction(SIGUSR2, 0, &old) != 0 || old.sa_handler != SIG_DFL)
    return 12;
  /* A plain handler with SA_RESETHAND: once reset, the old action is SIG_DFL with the program's flags. */
  struct sigaction once = {0};
  once.sa_handler = on_usr1;
  once.sa_flags = SA_RESETHAND | SA_NODEFER;
  if (sigaction(SIGUSR1, &once, &old) != 0 || old.sa_handler != on_usr1 || (old.sa_flags & SA_SIGINFO))
    return 13;
  raise(SIGUSR1);
  struct sigaction dfl = {0};
  dfl.sa_handler = SIG_DFL;
  if (sigaction(SIGUSR1, &dfl, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) ||
      !(old.sa_flags & SA_NODEFER) || seen_wrong)
    return 14;
  int escapes = 0;
  if (argc > 1) {
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    sigaltstack(&ss, 0);
    struct sigaction segv = {0};
    segv.sa_handler = on_segv;
    segv.sa_flags = SA_ONSTACK;
    sigaction(SIGSEGV, &segv, 0);
    for (int i = 0; i < 2; i++)
      if (sigsetjmp(back, 1) == 0)
        recurse(0);
      else
        escapes++;
  }
  printf("usr %d escapes %d\n", usr1, escapes);
  return 0;
}
