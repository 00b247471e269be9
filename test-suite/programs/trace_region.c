/* Region tracing: __pathprof_trace_start()/__pathprof_trace_stop() around a section, per thread. Main starts
 * its region two calls deep (inside enter_region, called from section) and stops it in main; a worker thread
 * traces a region of its own. fib is also called through a pointer (an entry with a full id) twice before
 * main's region and once inside it: the region's reader starts with an empty entry cache, so the writer must
 * empty its own where the region starts. Built with PATHPROF_WEAK_API: the same source links without pathprof. */
#define PATHPROF_WEAK_API
#include "pathprof.h"
#include <pthread.h>
static unsigned fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static unsigned (*volatile fibp)(unsigned) = fib;
static unsigned churn(unsigned x, int n) {
  for (int i = 0; i < n; i++)
    x = (x & 1) ? 3 * x + 1 : x / 2;
  return x;
}
static void enter_region(unsigned *s) {
  *s += churn(*s, 5);
  pathprof_trace_start_if_linked();
  *s += fib(6);
  *s += fibp(3);
}
static unsigned section(unsigned s) {
  enter_region(&s);
  for (int i = 0; i < 4; i++)
    s += (s & 1) ? fib(i + 3) : churn(s, i);
  return s;
}
static void *worker(void *arg) {
  unsigned *s = arg;
  *s = churn(*s, 100) + fib(10);
  pathprof_trace_start_if_linked();
  *s += fib(5) + churn(*s, 3);
  pathprof_trace_stop_if_linked();
  *s += fib(12);
  return 0;
}
int main(void) {
  unsigned s = fib(15) + churn(7, 50) + fibp(4) + fibp(4);
  pthread_t t;
  unsigned w = 5;
  pthread_create(&t, 0, worker, &w);
  pthread_join(t, 0);
  s = section(s + w);
  pathprof_trace_stop_if_linked();
  s += fib(14);
  return (int)(s & 1);
}
