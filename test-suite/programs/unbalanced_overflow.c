/* A leaf called 127 times in a row by `work`, which four roots call: piecewise numbering counts, for the leaf's
 * returns, what each return site continues with — 2^(127-i) paths after the i-th call, times the 4 callers'
 * continuations — about 2^129 in all (numUnbalRLPaths), more than u128, while every ψ fits. The budget policy
 * then cuts the leaf's call sites (it once cut only the overflowing procedure's callees, of which the leaf has
 * none, and gave up: gnulib's test-vasprintf-posix.c did not compile in piecewise mode). */
#include <stdio.h>
#include <stdlib.h>

static volatile int sink;

__attribute__((noinline)) static int leaf(int x) {
  if (x & 1)
    sink = x;
  return x >> 1;
}

__attribute__((noinline)) static int work(int x) {
  int n = 0;
  n += leaf(x + 0);
  n += leaf(x + 1);
  n += leaf(x + 2);
  n += leaf(x + 3);
  n += leaf(x + 4);
  n += leaf(x + 5);
  n += leaf(x + 6);
  n += leaf(x + 7);
  n += leaf(x + 8);
  n += leaf(x + 9);
  n += leaf(x + 10);
  n += leaf(x + 11);
  n += leaf(x + 12);
  n += leaf(x + 13);
  n += leaf(x + 14);
  n += leaf(x + 15);
  n += leaf(x + 16);
  n += leaf(x + 17);
  n += leaf(x + 18);
  n += leaf(x + 19);
  n += leaf(x + 20);
  n += leaf(x + 21);
  n += leaf(x + 22);
  n += leaf(x + 23);
  n += leaf(x + 24);
  n += leaf(x + 25);
  n += leaf(x + 26);
  n += leaf(x + 27);
  n += leaf(x + 28);
  n += leaf(x + 29);
  n += leaf(x + 30);
  n += leaf(x + 31);
  n += leaf(x + 32);
  n += leaf(x + 33);
  n += leaf(x + 34);
  n += leaf(x + 35);
  n += leaf(x + 36);
  n += leaf(x + 37);
  n += leaf(x + 38);
  n += leaf(x + 39);
  n += leaf(x + 40);
  n += leaf(x + 41);
  n += leaf(x + 42);
  n += leaf(x + 43);
  n += leaf(x + 44);
  n += leaf(x + 45);
  n += leaf(x + 46);
  n += leaf(x + 47);
  n += leaf(x + 48);
  n += leaf(x + 49);
  n += leaf(x + 50);
  n += leaf(x + 51);
  n += leaf(x + 52);
  n += leaf(x + 53);
  n += leaf(x + 54);
  n += leaf(x + 55);
  n += leaf(x + 56);
  n += leaf(x + 57);
  n += leaf(x + 58);
  n += leaf(x + 59);
  n += leaf(x + 60);
  n += leaf(x + 61);
  n += leaf(x + 62);
  n += leaf(x + 63);
  n += leaf(x + 64);
  n += leaf(x + 65);
  n += leaf(x + 66);
  n += leaf(x + 67);
  n += leaf(x + 68);
  n += leaf(x + 69);
  n += leaf(x + 70);
  n += leaf(x + 71);
  n += leaf(x + 72);
  n += leaf(x + 73);
  n += leaf(x + 74);
  n += leaf(x + 75);
  n += leaf(x + 76);
  n += leaf(x + 77);
  n += leaf(x + 78);
  n += leaf(x + 79);
  n += leaf(x + 80);
  n += leaf(x + 81);
  n += leaf(x + 82);
  n += leaf(x + 83);
  n += leaf(x + 84);
  n += leaf(x + 85);
  n += leaf(x + 86);
  n += leaf(x + 87);
  n += leaf(x + 88);
  n += leaf(x + 89);
  n += leaf(x + 90);
  n += leaf(x + 91);
  n += leaf(x + 92);
  n += leaf(x + 93);
  n += leaf(x + 94);
  n += leaf(x + 95);
  n += leaf(x + 96);
  n += leaf(x + 97);
  n += leaf(x + 98);
  n += leaf(x + 99);
  n += leaf(x + 100);
  n += leaf(x + 101);
  n += leaf(x + 102);
  n += leaf(x + 103);
  n += leaf(x + 104);
  n += leaf(x + 105);
  n += leaf(x + 106);
  n += leaf(x + 107);
  n += leaf(x + 108);
  n += leaf(x + 109);
  n += leaf(x + 110);
  n += leaf(x + 111);
  n += leaf(x + 112);
  n += leaf(x + 113);
  n += leaf(x + 114);
  n += leaf(x + 115);
  n += leaf(x + 116);
  n += leaf(x + 117);
  n += leaf(x + 118);
  n += leaf(x + 119);
  n += leaf(x + 120);
  n += leaf(x + 121);
  n += leaf(x + 122);
  n += leaf(x + 123);
  n += leaf(x + 124);
  n += leaf(x + 125);
  n += leaf(x + 126);
  return n;
}

int first(int x) { return work(x + 0); }
int second(int x) { return work(x + 1); }
int third(int x) { return work(x + 2); }
int fourth(int x) { return work(x + 3); }

/* Through pointers, so that each of the four is a root of its own. */
int (*volatile entry[4])(int) = {first, second, third, fourth};

int main(int argc, char **argv) {
  int x = argc > 1 ? atoi(argv[1]) : 7, n = 0;
  for (int i = 0; i < 4; i++)
    n += entry[i](x);
  printf("%d\n", n);
  return 0;
}
