// Trace mode and exceptions: throws caught several frames up, a frame without handlers the exception passes
// through, a cleanup (a destructor) run while unwinding, a rethrow, catch(...), and an exception caught in the
// frame that throws. Deterministic; prints a checksum so a changed behaviour shows.
#include <cstdio>
#include <stdexcept>

static volatile int sink;

struct Guard {
    int v;
    explicit Guard(int v) : v(v) {}
    ~Guard() { sink += v; } // runs on unwinding too
};

__attribute__((noinline)) int leaf(int i) {
    if (i % 5 == 0)
        throw std::runtime_error("five");
    if (i % 7 == 0)
        throw i;
    return i * 2;
}

// No handler and nothing to clean up: unwinding passes through without a landing pad.
__attribute__((noinline)) int pass_through(int i) {
    int r = leaf(i);
    return r + 1;
}

// A cleanup: Guard's destructor runs, then the exception goes on (resume).
__attribute__((noinline)) int with_cleanup(int i) {
    Guard g(i);
    return pass_through(i) + g.v;
}

// Catches int, rethrows every third one.
__attribute__((noinline)) int rethrower(int i) {
    try {
        return with_cleanup(i);
    } catch (int k) {
        sink += k;
        if (k % 3 == 0)
            throw;
        return -k;
    }
}

// Throws and catches in the same frame.
__attribute__((noinline)) int local(int i) {
    try {
        if (i & 1)
            throw 1.5;
        return 1;
    } catch (double) {
        return 2;
    }
}

__attribute__((noinline)) int recurse(int n) {
    Guard g(1);
    if (n == 0)
        throw n;
    return recurse(n - 1) + 1;
}

int main(int argc, char **) {
    long sum = 0;
    for (int i = 1; i < 40 + argc; i++) {
        try {
            sum += rethrower(i);
        } catch (const std::exception &e) {
            sum += 100;
        } catch (...) {
            sum += 1000;
        }
        sum += local(i);
    }
    try {
        recurse(6);
    } catch (int) {
        sum += 7;
    }
    std::printf("%ld %d\n", sum, sink);
    return 0;
}
