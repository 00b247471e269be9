/* Flight recorder: millions of blocks through recursion and loops, then a SIGSEGV through a null pointer
 * inside a recursion (deterministic). With "threads": three workers run the same work with different seeds
 * and join, then main crashes. */
#include <pthread.h>
#include <string.h>
static int *volatile nowhere;
static unsigned mix(unsigned x) {
  for (int i = 0; i < 3; i++)
    x = (x & 1) ? 3 * x + 1 : x / 2 + 7;
  return x;
}
static unsigned walk(int n, unsigned x) {
  if (n == 0)
    return mix(x);
  unsigned s = 0;
  for (int i = 0; i < n; i++)
    s += (x >> i) & 1 ? mix(x + i) : i;
  return s + walk(n - 1, x ^ s);
}
static unsigned work(unsigned seed, int rounds) {
  unsigned s = seed;
  for (int r = 0; r < rounds; r++)
    s += walk(r % 12, s + r);
  return s;
}
static int crash(int n, unsigned s) {
  if (n == 0)
    return *nowhere + (int)s;
  return crash(n - 1, mix(s)) + 1;
}
static void *worker(void *arg) {
  unsigned *s = arg;
  *s = work(*s, 3000 + (int)(*s % 7) * 300);
  return 0;
}
int main(int argc, char **argv) {
  unsigned s = 1;
  if (argc > 1 && strcmp(argv[1], "threads") == 0) {
    pthread_t t[3];
    unsigned seeds[3] = {11, 22, 33};
    for (int i = 0; i < 3; i++)
      pthread_create(&t[i], 0, worker, &seeds[i]);
    for (int i = 0; i < 3; i++)
      pthread_join(t[i], 0);
    s = seeds[0] + seeds[1] + seeds[2];
  } else {
    s = work(s, 8000);
  }
  return crash(5, s);
}
