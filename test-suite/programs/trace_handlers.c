/* Signal handlers that run traced code in the middle of traced bodies, as libsigsegv's users do: main stores
 * into a page it protected, and the SIGSEGV handler unprotects it and returns, so the store runs again. The
 * handler itself stores into a second protected page the first time (a fault nested in the handler: the
 * handler is installed with SA_NODEFER), and a SIGUSR1 handler raised from main runs a nested SIGUSR2 one.
 * With an argument, a last fault's handler leaves through siglongjmp (as libsigsegv's stack-overflow
 * continuation does) and main goes on after its sigsetjmp.
 *
 * By hand, without an argument: main's loop runs 1000 times; 4 of its iterations (i % 250 == 3) fault, the
 * first of those faults again inside its handler: 5 SIGSEGV handler runs, 4 in main's body and 1 nested; 10
 * SIGUSR1 runs (i % 100 == 7), each raising SIGUSR2 once. work() runs 1000 (main) + 5 × 3 (SIGSEGV) + 10 × 10
 * (SIGUSR1) + 10 × 7 (SIGUSR2) = 1185 times. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile unsigned long sink;
static char *pages[3];
static long page_size;
static sigjmp_buf escape;
static volatile int nested_done;

__attribute__((noinline)) static void work(unsigned long i) {
    switch (i % 4) {
    case 0:
        sink += i;
        break;
    case 1:
        sink *= 3;
        break;
    default:
        sink ^= i << 1;
    }
}

static void protect(int k, int prot) {
    if (mprotect(pages[k], page_size, prot) != 0)
        _exit(3);
}

static int page_of(const char *at) {
    for (int k = 0; k < 3; k++)
        if (at >= pages[k] && at < pages[k] + page_size)
            return k;
    return -1;
}

static void on_segv(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)context;
    int k = page_of(info->si_addr);
    for (unsigned long i = 0; i < 3; i++)
        work(i);
    if (k == 2) {
        siglongjmp(escape, 1);
    } else if (k == 0) {
        if (!nested_done) {
            nested_done = 1;
            pages[1][0] = 1; /* faults: the nested run maps page 1 */
        }
        protect(0, PROT_READ | PROT_WRITE);
    } else if (k == 1) {
        protect(1, PROT_READ | PROT_WRITE);
    } else {
        _exit(4);
    }
}

static void on_usr2(int sig) {
    (void)sig;
    for (unsigned long i = 0; i < 7; i++)
        work(i);
}

static void on_usr1(int sig) {
    (void)sig;
    for (unsigned long i = 0; i < 10; i++) {
        work(i);
        if (i == 4)
            raise(SIGUSR2);
    }
}

int main(int argc, char **argv) {
    (void)argv;
    page_size = sysconf(_SC_PAGESIZE);
    char *map = mmap(0, 3 * page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return 2;
    for (int k = 0; k < 3; k++)
        pages[k] = map + k * page_size;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, 0);
    signal(SIGUSR1, on_usr1);
    signal(SIGUSR2, on_usr2);
    for (unsigned long i = 0; i < 1000; i++) {
        work(i);
        if (i % 100 == 7)
            raise(SIGUSR1);
        if (i % 250 == 3) {
            pages[0][i % 64] = (char)i; /* faults: the handler maps page 0 */
            protect(0, PROT_NONE);
        }
    }
    if (argc > 1) {
        if (sigsetjmp(escape, 1) == 0)
            pages[2][0] = 1; /* faults: the handler leaves through siglongjmp */
        for (unsigned long i = 0; i < 5; i++)
            work(i);
    }
    printf("%lu\n", sink);
    return 0;
}
