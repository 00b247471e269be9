/* A cleanup whose call does not return: the destructor writes to an unbuffered stream whose write function ends
 * the program (exit) on the second write made while an exception unwinds. Optimised (the whole-program link sees
 * the pre-link pipeline's IR), f's landing pad, the destructor's fputc and the `resume` are one block. f runs for
 * i = 0..3: it throws for i = 0 and i = 3, so its cleanup runs twice on the way out, and the second time it
 * never finishes. */
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sys/types.h>
static int unwinding_writes = 0;
static FILE *out;
static ssize_t write_out(void *, const char *, size_t n) {
    if (std::uncaught_exceptions() > 0 && ++unwinding_writes == 2)
        std::exit(0);
    return (ssize_t)n;
}
struct Guard {
    ~Guard() { std::fputc('x', out); }
};
__attribute__((noinline)) void f(int x) {
    Guard g;
    if (x % 3 == 0)
        throw x; // expect: 2
}
int main() {
    cookie_io_functions_t io = {nullptr, write_out, nullptr, nullptr};
    out = fopencookie(nullptr, "w", io);
    setvbuf(out, nullptr, _IONBF, 0);
    for (int i = 0; i < 10; i++) {
        try {
            f(i);
        } catch (int) {
        }
    }
    return 1; // not reached: the second unwinding exits with status 0
}
