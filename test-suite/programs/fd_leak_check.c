/* Checks, as gnulib's spawn tests do in their child, that no descriptor from 3 to 9 is open while the program
 * runs: the runtime's files must stay out of the program's way. Exits 1 (naming the descriptor) if one is. */
#include <fcntl.h>
#include <stdio.h>

int main(void) {
  int leaked = 0;
  for (int fd = 3; fd < 10; fd++)
    if (fcntl(fd, F_GETFD) != -1) {
      fprintf(stderr, "descriptor %d is open\n", fd);
      leaked = 1;
    }
  printf("checked\n");
  return leaked;
}
