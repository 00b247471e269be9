/* An inline function defined in two translation units (odr_main.cpp, odr_util.cpp): each module gets its own
 * linkonce_odr copy, with its own instrumentation, and the linker keeps one. Calls from the other module run
 * the kept copy, so they must not hand their interprocedural path to it through their own module's state.
 * main calls twice(i) for i in [0,10): x > 3 six times; other(i) for i in [0,10) calls twice(j) for j < i:
 * 45 calls, x > 3 for j in [4, i): 1+2+3+4+5 = 15. So 21 doubled, 34 incremented, 55 in all. */
#pragma once
__attribute__((noinline)) inline int twice(int x) {
    if (x > 3)
        return 2 * x; // expect: 21
    return x + 1; // expect: 34
}
int other(int x);
