/* Code that runs after the exit dump: the program's destructor (and the function it calls) runs after the
 * atexit handlers, which is where the runtime writes the profile (trace: ends the threads); with an argument
 * the program leaves through exit(3) from a callee, or with "q" through quick_exit(4), which runs the
 * at_quick_exit handler and neither the atexit handlers nor the destructors. By hand: bye's loop runs 10
 * times, so helper has 10 entries (i % 3 == 0 for i = 0, 3, 6, 9: 4 of them); at_exit_fn's loop 7 times;
 * with "q" only on_quick_exit runs (once). The exit code is 0 without an argument. */
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

static void on_quick_exit(void) { sink += 1; }

__attribute__((noinline)) static void leave(int code) {
  if (code == 4 && at_quick_exit(on_quick_exit) == 0)
    quick_exit(code);
  exit(code);
}

int main(int argc, char **argv) {
  atexit(at_exit_fn);
  puts("hi");
  if (argc > 1)
    leave(argv[1][0] == 'q' ? 4 : 3);
  return 0;
}
