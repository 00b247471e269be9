/* Trace mode: a program that closes every descriptor it did not open (as daemons and `closefrom` do) and reuses
   the numbers for files of its own, which must receive exactly what it writes (see tests/trace.rs). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static long work(long n) {
  long s = 0;
  for (long i = 0; i < n; i++)
    s += (i % 3 == 0) ? i : 1;
  return s;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  for (int fd = 3; fd < 256; fd++)
    close(fd);
  int fds[8];
  for (int i = 0; i < 8; i++) /* the lowest free numbers: the runtime's among them */
    fds[i] = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);
  long s = work(3000000); /* more than one 512 KiB buffer of bits: records are written while it runs */
  for (int i = 0; i < 8; i++)
    dprintf(fds[i], "%d\n", i);
  printf("%ld\n", s);
  return 0;
}
