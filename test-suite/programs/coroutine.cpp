/* A C++20 generator. LLVM splits a coroutine into ramp, resume and destroy functions after the pass has run:
 * each resumption enters the body right after the suspension it left. Edge and block modes count it (every
 * edge's counter runs in whichever part takes the edge); path, context, piecewise and trace modes leave
 * `numbers` uninstrumented (listed as not profiled, with the reason) and profile the rest exactly. With argc 1,
 * rounds make numbers(8), numbers(9), numbers(10): 27 values, of which 30, 60 (twice) and 90 are >= 10 —
 * classify runs 27 times, 7 of them returning 2; round 1 also abandons numbers(5) after its first value
 * (destroyed while suspended). numbers' loop test runs 9 + 10 + 11 + 1 times, its body 28 times: 11 values
 * i * 10 (i = 0, 3, 6 in each run, 9 in the last, 0 in the abandoned one) and 17 others. Prints 456. */
#include <coroutine>
#include <cstdio>
#include <exception>

struct Gen {
    struct promise_type {
        int value = 0;
        Gen get_return_object() { return Gen{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        std::suspend_always yield_value(int v) noexcept { value = v; return {}; }
        void return_void() noexcept {}
        void unhandled_exception() { std::terminate(); }
    };
    std::coroutine_handle<promise_type> h;
    explicit Gen(std::coroutine_handle<promise_type> h) : h(h) {}
    Gen(Gen&& o) noexcept : h(o.h) { o.h = nullptr; }
    ~Gen() { if (h) h.destroy(); }
    bool next() { h.resume(); return !h.done(); }
    int get() const { return h.promise().value; }
};

__attribute__((noinline)) Gen numbers(int n) {
    for (int i = 0; i < n; i++) { // expect: 31
        if (i % 3 == 0) // expect: 28
            co_yield i * 10; // expect: 11
        else
            co_yield i; // expect: 17
    }
}

__attribute__((noinline)) int classify(int v) {
    if (v >= 10)
        return 2; // expect: 7
    return v & 1; // expect: 20
}

int main(int argc, char **) {
    long sum = 0;
    for (int round = 0; round < 3; round++) {
        Gen g = numbers(7 + round + argc);
        while (g.next())
            sum += classify(g.get()) + g.get();
        if (round == 1) {
            Gen early = numbers(5); // expect: 1
            early.next();  // abandoned mid-way: destroyed while suspended
            sum += early.get();
        }
    }
    printf("%ld\n", sum);
    return 0;
}
