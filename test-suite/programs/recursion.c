/* fib(15): 1973 calls, of which fib(16) = 987 reach the base case. */
static volatile int sink;
__attribute__((noinline)) int fib(int n) {
    if (n < 2)
        return n; // expect: 987
    return fib(n - 1) + fib(n - 2); // expect: 986
}

int main(void) {
    sink = fib(15);
    return 0;
}
