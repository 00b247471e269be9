/* Code that runs after the exit dump: the program's destructor (and the function it calls) runs after the
 * atexit handlers, which is where the runtime writes the profile (trace: ends the threads); with an argument
 * the program leaves through exit(3) from a callee. By hand: bye's loop runs 10 times, so helper has 10
 * entries (i % 3 == 0 for i = 0, 3, 6, 9: 4 of them); at_exit_fn's loop 7 times; the exit code is 3 with an
 * argument, 0 without. */
#include <stdio.h>
#include <stdlib.h>

static volatile int sink;

__attribute__((noinline)) static void helper(int i) {
  if (i % 3 == 0)
    sink += i;
  else
    sink -= 1;
}

__attribute__((destructor)) static void bye(void) {
  for (int i = 0; i < 10; i++)
    helper(i);
}

static void at_exit_fn(void) {
  for (int i = 0; i < 7; i++)
    sink += i;
}

__attribute__((noinline)) static void leave(int code) { exit(code); }

int main(int argc, char **argv) {
  (void)argv;
  atexit(at_exit_fn);
  puts("hi");
  if (argc > 1)
    leave(3);
  return 0;
}
