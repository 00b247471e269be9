// A path-table update from a handler of the thread that holds the table's lock (test: reliability.rs,
// a_handler_update_of_a_table_its_thread_is_updating_is_counted). Built with every function of more than one
// path in a hash table: g's table is mapped (`mmap`, under its lock) when g(0)'s path is counted, the first
// table insertion of the run (main has one path and rest has not counted one yet). The test stops there in gdb and calls g(7) on the same thread, as a signal handler
// could; `parked_update extra` calls g(7) itself instead. Both runs must count g's paths alike:
// g(0..9), plus g(7) once.
#include <stdio.h>

__attribute__((noinline)) int g(int x) {
  int r = x;
  if (x & 1)
    r += 3;
  else
    r -= 1;
  if (x & 2)
    r *= 2;
  return r;
}

// One path before g(0) returns (main's count is a single counter, not a table).
__attribute__((noinline)) int rest(int argc) {
  int s = 0;
  for (int i = 1; i < 10; i++)
    s += g(i);
  if (argc > 1)
    s += g(7);
  return s;
}

int main(int argc, char **argv) {
  (void)argv;
  int s = g(0);
  s += rest(argc);
  printf("%d\n", s);
  return 0;
}
