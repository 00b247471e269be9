/* One kernel as a program: `NAME SIZE` prints the kernel's name, size and checksum. Built with
 * -DKERNEL=kernel_<name> next to that kernel's own file (bench/run.py, programs()). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "kernels.h"

#ifndef KERNEL
#error "build with -DKERNEL=kernel_<name>"
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

int main(int argc, char **argv) {
  char *end;
  long n = argc == 2 ? strtol(argv[1], &end, 10) : 0;
  if (argc != 2 || *end != '\0' || n <= 0) {
    fprintf(stderr, "usage: %s SIZE (a positive integer)\n", argv[0]);
    return 2;
  }
  printf("%s %ld %016" PRIx64 "\n", STR(KERNEL), n, KERNEL(n));
  return 0;
}
