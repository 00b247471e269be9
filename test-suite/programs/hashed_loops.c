/* Loops whose paths count in a hash table or a sparse region (forced with PATHPROF_PATH_ARRAY_MAX=1): a back
 * edge's repeated paths are counted in local slots, added to the table on the loop's exits
 * (pass/src/promote.rs, flush_local_counts). The loops leave in every way a promotion region can be left: the
 * loop test, a break, a return from inside, an inner loop's exit into the outer body; a loop that calls an
 * instrumented function (a followed call site in the interprocedural modes); and one with more exits than the
 * flush budget allows (1,100 cases that return), whose matches are counted where they happen instead. */
#include <stdio.h>
#include <stdlib.h>

static int data[64];

__attribute__((noinline)) static long one_path(int n) {
  long s = 0;
  for (int i = 0; i < n; i++)
    s += data[i & 63];
  return s;
}

__attribute__((noinline)) static long two_paths(int n) {
  long s = 0;
  for (int i = 0; i < n; i++) {
    if (data[i & 63] & 1)
      s += 3;
    else
      s -= 1;
  }
  return s;
}

__attribute__((noinline)) static long until(int n, int stop) {
  long s = 0;
  for (int i = 0; i < n; i++) {
    if (data[i & 63] == stop)
      break;
    s++;
  }
  return s;
}

__attribute__((noinline)) static long find(int n, int stop) {
  for (int i = 0; i < n; i++)
    if (data[i & 63] == stop)
      return i;
  return -1;
}

__attribute__((noinline)) static long triangle(int n) {
  long s = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      s += data[j & 63] > 5;
  return s;
}

__attribute__((noinline)) static int leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) static long calls(int n) {
  long s = 0;
  for (int i = 0; i < n; i++)
    s += leaf(data[i & 63]);
  return s;
}

#define C1(n) case n: return n;
#define C10(n) C1(n##0) C1(n##1) C1(n##2) C1(n##3) C1(n##4) C1(n##5) C1(n##6) C1(n##7) C1(n##8) C1(n##9)
#define C100(n) C10(n##0) C10(n##1) C10(n##2) C10(n##3) C10(n##4) C10(n##5) C10(n##6) C10(n##7) C10(n##8) C10(n##9)

__attribute__((noinline)) static long many_exits(int n, int bias) {
  for (int i = 0; i < n; i++) {
    switch (data[i & 63] + bias) {
      C100(1) C100(2) C100(3) C100(4) C100(5) C100(6) C100(7) C100(8) C100(9) C100(10) C100(11)
    default:
      break;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200;
  for (int i = 0; i < 64; i++)
    data[i] = (i * 7) % 13;
  long t = 0;
  for (int r = 0; r < 5; r++) {
    t += one_path(n + r);
    t += two_paths(n - r);
    t += until(n, r + 8);
    t += find(n, r + 20);
    t += triangle(r * 7);
    t += calls(n / 2 + r);
    t += many_exits(n, 2000 + r);
    t += many_exits(n, 1187 - r);
  }
  printf("%ld\n", t);
  return 0;
}
