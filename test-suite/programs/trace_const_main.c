// Calls to a const and a pure function whose results an optimiser may drop or merge (sed's gnulib tests:
// `(void) gl_sockets_startup (…)`, 13 calls of `gl_locale_name_default`). By the source: answer runs 3 times,
// twice 4 times, plain once.
#include <stdio.h>
__attribute__((const)) int answer(void);
__attribute__((pure)) int twice(int x);
int plain(int x);

int main(int argc, char **argv) {
    (void)argv;
    (void)answer();
    (void)answer();
    int a = answer();
    int b = twice(argc) + twice(argc);
    int c = twice(a);
    int d = twice(argc + 1);
    printf("%d\n", a + b + c + d + plain(argc));
    return 0;
}
