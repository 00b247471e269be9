/* An ifunc: `resolve` runs once, while the program is being loaded (before constructors, and in a static
 * program before thread-local storage exists), and picks impl_a; pick(i) then runs impl_a 5 times. Trace mode
 * leaves the resolver untraced (a static program crashed, a dynamic one's trace read as corrupt); the counting
 * modes count it. Prints 15. */
#include <stdio.h>

static volatile int sink;

static int impl_a(int x) {
    return x + 1; // expect: 5
}

static int impl_b(int x) {
    return x + 2; // expect: 0
}

static int (*resolve(void))(int) {
    if (sink == 0)
        return impl_a; // expect: 1
    return impl_b; // expect: 0
}

int pick(int x) __attribute__((ifunc("resolve")));

int main(void) {
    int s = 0;
    for (int i = 0; i < 5; i++)
        s += pick(i);
    printf("%d\n", s);
    return 0;
}
