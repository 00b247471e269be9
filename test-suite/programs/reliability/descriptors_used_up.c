/* Uses up its descriptors, then exits: the profile must still be written. Run under `ulimit -n 128`, as GNU
 * make's test suite runs make on a makefile that includes itself until fopen() fails, it opens /dev/null until
 * open() fails with EMFILE, then prints how many opens succeeded and whether the last one failed with EMFILE.
 * The loop's body runs once per successful open: the count the test reads back from the profile. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

int main(void) {
  long opened = 0;
  int emfile = 0;
  for (;;) {
    if (open("/dev/null", O_RDONLY) < 0) {
      emfile = errno == EMFILE;
      break;
    }
    opened++;
  }
  printf("%ld %d\n", opened, emfile);
  return 0;
}
