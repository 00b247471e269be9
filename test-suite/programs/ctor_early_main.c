/* With ctor_early_helper.c: a constructor at priority 101, the first a program may use, calls helper() (in the
 * other translation unit) before main does — helper runs twice, init_early once. Every module's registration
 * must run before it (the pass uses priority 1): trace mode wrote the call under an id not yet assigned, read
 * back as init_early's (link order main, helper) or as an unknown function (helper, main). Prints "6 8". */
#include <stdio.h>

int helper(int);
static int early;

__attribute__((constructor(101))) static void init_early(void) {
    early = helper(3);
}

int main(void) {
    printf("%d %d\n", early, helper(4));
    return 0;
}
