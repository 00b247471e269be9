/* A static function called directly (add(100)) and also passed as an argument to another program function's
 * call site (visit(add, 10)), which calls it through the pointer. Its address escapes through that argument, so
 * it can be entered from outside a call site and must check at entry. visit runs 3 times × 10 calls: x odd for
 * 5 of each 10; add(100) is even. total = 3 * (25 - 5) - 1 = 59. */
static int total;
static void add(int x) {
    if (x & 1)
        total += x; // expect: 15
    else
        total -= 1; // expect: 16
}
static void visit(void (*cb)(int), int n) {
    for (int i = 0; i < n; i++)
        cb(i); // expect: 30
}
int main(void) {
    for (int k = 0; k < 3; k++)
        visit(add, 10); // expect: 3
    add(100); // expect: 1
    return total == 59 ? 0 : 1;
}
