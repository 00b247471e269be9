/* Inline `syscall` whose assembly omits the registers the instruction overwrites (rcx: the return address, r11:
 * the flags), as LZO 2.10's lzo_pclock_syscall_clock_gettime does. The plain build works: nothing of the program
 * lives in those registers across the instruction. Instrumentation adds values that do (context mode's path
 * number from entry to return; counters promoted in a loop), so the pass declares the two clobbers.
 * Hand-derived: main's loop runs 1000 times, odd i 500, even i 500; the loop of 100 in count_pids calls on_third
 * for i = 0, 3, ..., 99 (34 times) and on_other 66 times. Prints "0 100 1500" (sink: 500·1 + 500·2; on_third and
 * on_other add to `pids`, not to sink). */
#include <stdio.h>
#include <time.h>

static volatile int sink;
__attribute__((noinline)) static void on_odd(void) { sink += 1; }
__attribute__((noinline)) static void on_even(void) { sink += 2; }
__attribute__((noinline)) static long on_third(unsigned long pid) { return pid > 0; }
__attribute__((noinline)) static long on_other(unsigned long pid) { return pid != 0; }

__attribute__((noinline)) static long raw_gettime(long clockid, struct timespec *ts) {
    unsigned long r = 228; /* SYS_clock_gettime */
    __asm__ __volatile__("syscall\n" : "=a"(r), "=m"(*ts) : "0"(r), "D"(clockid), "S"(ts) : "cc");
    return (long)r;
}

static long count_pids(int n) {
    long pids = 0;
    for (int i = 0; i < n; i++) {
        unsigned long r = 39; /* SYS_getpid */
        __asm__ __volatile__("syscall" : "=a"(r) : "0"(r) : "cc");
        if (i % 3 == 0)
            pids += on_third(r); // expect: 34
        else
            pids += on_other(r); // expect: 66
    }
    return pids;
}

int main(void) {
    struct timespec ts;
    int failed = 0;
    for (int i = 0; i < 1000; i++) {
        if (raw_gettime(i & 1, &ts) != 0) /* CLOCK_REALTIME, CLOCK_MONOTONIC: never fails */
            failed++;
        if (i & 1)
            on_odd(); // expect: 500
        else
            on_even(); // expect: 500
    }
    long pids = count_pids(100);
    printf("%d %ld %d\n", failed, pids, sink);
    return 0;
}
