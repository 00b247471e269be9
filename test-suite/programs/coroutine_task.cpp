/* C++20 tasks as asynchronous libraries write them: lazy, awaited by their caller, resuming it by symmetric
 * transfer (final_suspend's await_suspend returns the continuation's handle, which LLVM resumes by a tail
 * call that ends the suspending activation), exceptions carried to the awaiting coroutine, and an awaiter whose
 * bool await_suspend resumes the coroutine itself before it returns — the suspending activation is still in
 * await_suspend while the rest of the body runs to its end, its frame freed. top awaits middle(10) … middle(17),
 * each of which awaits leaf(i) for i < n: 108 leaves. leaf(13) throws (4 times: n = 14 … 17) before it awaits;
 * of the other 104, 30 have v % 4 == 0 (ready, no suspension), 48 odd ones do not suspend (await_suspend returns
 * false), 26 are resumed inside await_suspend. A ninth middle(3) is destroyed before it starts. Prints 5477. */
#include <coroutine>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <utility>

template <typename T> struct Task {
    struct promise_type {
        T value{};
        std::exception_ptr error;
        std::coroutine_handle<> continuation = std::noop_coroutine();
        Task get_return_object() { return Task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        struct Final {
            bool await_ready() noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
                return h.promise().continuation;
            }
            void await_resume() noexcept {}
        };
        Final final_suspend() noexcept { return {}; }
        void return_value(T v) { value = v; }
        void unhandled_exception() { error = std::current_exception(); }
    };
    std::coroutine_handle<promise_type> h;
    explicit Task(std::coroutine_handle<promise_type> h) : h(h) {}
    Task(Task &&o) noexcept : h(std::exchange(o.h, nullptr)) {}
    ~Task() {
        if (h)
            h.destroy();
    }
    bool await_ready() { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> c) {
        h.promise().continuation = c;
        return h;
    }
    T await_resume() {
        if (h.promise().error)
            std::rethrow_exception(h.promise().error);
        return h.promise().value;
    }
    T run() {
        h.resume();
        return await_resume();
    }
};

struct MaybeSuspend {
    int v;
    bool await_ready() { return v % 4 == 0; }
    bool await_suspend(std::coroutine_handle<> h) {
        if (v % 2 == 1)
            return false; // expect: 48
        h.resume(); // expect: 26
        return true;
    }
    int await_resume() { return v * 2; }
};

static int check(int v) {
    if (v == 13)
        throw std::runtime_error("thirteen"); // expect: 4
    return v % 5; // expect: 104
}

Task<int> leaf(int v) {
    int r = check(v);
    int m = co_await MaybeSuspend{v};
    co_return r + m; // expect: 104
}

Task<int> middle(int n) {
    int sum = 0;
    for (int i = 0; i < n; i++) {
        try {
            sum += co_await leaf(i);
        } catch (const std::exception &) {
            sum += 1000; // expect: 4
        }
    }
    co_return sum; // expect: 8
}

Task<long> top(int rounds) {
    long total = 0;
    for (int r = 0; r < rounds; r++)
        total += co_await middle(10 + r);
    co_return total; // expect: 1
}

int main() {
    Task<long> t = top(8);
    std::printf("%ld\n", t.run());
    {
        Task<int> never = middle(3); // expect: 1
    }
    return 0;
}
