/* A cleanup that calls a function which may not return (fflush: nounwind, not willreturn) and then resumes
 * unwinding. Optimised (the whole-program link sees the pre-link pipeline's IR), the landing pad, the call and
 * the `resume` share one block: a block that may be left abnormally in two ways, by the call or by the
 * `resume`, and must still count each arrival once. f(i) for i in [0,10) throws for i % 3 == 0: 4 times. */
#include <cstdio>
struct Guard {
    ~Guard() { std::fflush(stdout); }
};
__attribute__((noinline)) void f(int x) {
    Guard g;
    if (x % 3 == 0)
        throw x; // expect: 4
}
int main() {
    int caught = 0;
    for (int i = 0; i < 10; i++) {
        try {
            f(i);
        } catch (int) {
            caught++;
        }
    }
    return caught == 4 ? 0 : 1;
}
