// Callees of trace_const_main.c, defined in another translation unit (the caller sees only declarations).
int answer(void) { return 42; }
int twice(int x) { return 2 * x; }
int plain(int x) { return x + 1; }
