/* A thread of the process when it ends. argv[1]:
 *   "spin":    a detached worker goes round spin()'s loop when main returns (QuickJS's workers, found by the
 *              corpus): an activation of spin() and one of worker() are in the middle of a block, where no
 *              counter accounts for them. The dump cannot say which, so every record is flagged.
 *   "spin_":   the same, ended by _exit (the write before it).
 *   "parked":  the worker has stepped 10 times and sleeps in pause(), a call that may not return, when main
 *              returns: its activations wait inside calls, accounted for exactly. main waits until the kernel
 *              has it asleep (its /proc state 'S'). Counts: main 1, worker 1, park 1, step 10.
 *   "parked_nofd": the same, after main has opened /dev/null until no descriptor is left (run it under
 *              `ulimit -n 256`): the runtime's census must make do with the descriptors it holds.
 *   "vforked": the worker steps 10 times and vforks a child that sleeps 300 ms; main returns while the worker
 *              waits for it in uninterruptible sleep (state 'D') inside the vfork system call: accounted for
 *              (the census took 'D' for a page fault in the middle of a block at first). Counts: main 1,
 *              worker 1, step 10.
 *   "joined":  the worker steps 10 times and returns; main joins it. Counts: main 1, worker 1, step 10.
 *   "woken":   the worker steps 10 times and waits on a condition variable when main returns; the program's
 *              destructor (join_worker, after exit's dump) wakes it and joins it, so it runs wait_for_stop's
 *              return and finish() after the exit dump, before the module destructor's: exact, counted.
 *              Counts: main 1, worker 1, step 10, wait_for_stop 1, finish 1.
 *   "main_exits": main calls pthread_exit; the worker steps 10 times and returns, the last thread, which ends
 *              the process (exit status 0): the main thread is listed as a zombie then, with no activation
 *              left (the runtime took it for a running thread at first). Counts: main 1, worker 1, step 10.
 *   "naps":    the worker steps and sleeps 200 us in a loop that never ends, so it is asleep at some dumps
 *              and wakes during others (the runtime merged such runs into the profile, flagged).
 *   "pooled":  the worker steps 10 times and goes idle the way a thread pool's worker does (LLVM's OpenMP
 *              runtime after every parallel region): it spins for 100 ms in code that is not instrumented,
 *              then sleeps in pause(). main returns while it spins: no activation is in the middle of a block
 *              (worker's waits in the call of idle()), and the dump at the end waits for the spinning thread
 *              to fall asleep instead of flagging every run. Counts: main 1, worker 1, step 10.
 *   "pooled_": the same, ended by _exit.
 * join_worker runs once in every case (it joins only in "woken"). Exit status 0 in every case. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int inside;
static volatile int worker_tid;
static volatile unsigned long iterations;
static volatile unsigned long sink;
static int how_spin, how_park, how_wait, how_main_exits, how_nap, how_vfork, how_pool;
static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stop;

/* The kernel's state of thread `tid` ('R', 'S', 'Z', ...), 0 if unknown. */
static char thread_state(int tid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *close = strrchr(buf, ')');
  return close && close[1] == ' ' ? close[2] : 0;
}

__attribute__((noinline)) static void step(int k) {
  if (k & 1)
    sink += 3;
  else
    sink ^= 5;
}

__attribute__((noinline)) static void spin(void) {
  inside = 1;
  for (;;)
    iterations++;
}

__attribute__((noinline)) static void park(void) {
  for (;;)
    pause();
}

/* A pool worker's idling, not instrumented (as in a thread library): spin 100 ms, then sleep for good. */
__attribute__((no_profile_instrument_function, noinline)) static void idle(void) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  inside = 1;
  do {
    iterations++;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000000L);
  for (;;)
    pause();
}

__attribute__((noinline)) static void wait_for_stop(void) {
  pthread_mutex_lock(&mu);
  while (!stop)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void finish(void) { sink += 7; }

__attribute__((destructor)) static void join_worker(void) {
  if (!how_wait)
    return;
  pthread_mutex_lock(&mu);
  stop = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(thread, 0);
}

static void *worker(void *arg) {
  (void)arg;
  worker_tid = (int)syscall(SYS_gettid);
  if (how_main_exits) /* the main thread's pthread_exit has left it a zombie */
    while (thread_state(getpid()) != 'Z')
      usleep(1000);
  if (how_spin)
    spin();
  if (how_nap)
    for (int k = 0;; k++) {
      step(k);
      inside = 1;
      struct timespec nap = {0, 200000};
      nanosleep(&nap, 0);
    }
  for (int k = 0; k < 10; k++)
    step(k);
  if (how_park)
    park();
  if (how_pool)
    idle();
  if (how_vfork && vfork() == 0) {
    struct timespec nap = {0, 300000000};
    syscall(SYS_nanosleep, &nap, 0);
    _exit(0);
  }
  if (how_wait) {
    wait_for_stop();
    finish();
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "joined";
  how_spin = !strncmp(how, "spin", 4);
  how_park = !strncmp(how, "parked", 6);
  how_wait = !strcmp(how, "woken");
  how_main_exits = !strcmp(how, "main_exits");
  how_nap = !strcmp(how, "naps");
  how_vfork = !strcmp(how, "vforked");
  how_pool = !strncmp(how, "pooled", 6);
  pthread_attr_t a;
  pthread_attr_init(&a);
  if (strcmp(how, "joined") && !how_wait)
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_create(&thread, &a, worker, 0);
  if (how_spin || how_nap || how_pool) {
    while (!inside)
      ;
    if (!strcmp(how, "spin_") || !strcmp(how, "pooled_"))
      _exit(0);
  } else if (how_park || how_wait || how_vfork) {
    while (!worker_tid || thread_state(worker_tid) != (how_vfork ? 'D' : 'S'))
      usleep(1000);
    if (!strcmp(how, "parked_nofd"))
      while (open("/dev/null", O_RDONLY) >= 0)
        ;
  } else if (how_main_exits) {
    pthread_exit(0);
  } else {
    pthread_join(thread, 0);
  }
  return 0;
}
