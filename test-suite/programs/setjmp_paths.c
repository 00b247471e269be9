/* setjmp in a loop and before a loop, with the path state changed between the setjmp and the longjmp back:
 * a path-numbering mode must resume the path of the setjmp call, not whatever the abandoned rest of the path
 * left in the activation's state (without optimisation that state stays in memory). */
#include <setjmp.h>
static jmp_buf env, env2;
static volatile int sink;

__attribute__((noinline)) static void deep(int i) {
    if (i % 3 == 1)
        longjmp(env, 1); // expect: 3
    sink++;              // expect: 7
}

__attribute__((noinline)) static void jump_back(void) {
    longjmp(env2, 1); // expect: 3
}

/* setjmp before a loop; the longjmp comes from the loop's fourth iteration, three times. */
__attribute__((noinline)) static int retry(int k) {
    volatile int tries = 0;
    if (setjmp(env2) != 0) {
        tries++;         // expect: 3
        if (tries > 2)
            return tries; // expect: 1
    }
    for (int j = 0; j < k; j++) {
        if (j == 3)
            jump_back(); // expect: 3
        sink++;          // expect: 9
    }
    return 0;
}

int main(void) {
    volatile int n = 0;
    for (int i = 0; i < 10; i++) {
        int r = setjmp(env);
        if (r == 0) {
            if (i & 1)
                sink += 5; // expect: 5
            else
                sink += 7; // expect: 5
            if (i & 2)
                sink += 11; // expect: 4
            else
                sink += 13; // expect: 6
            if (n++ < 100)
                deep(i);
            sink += 3; // expect: 7
        } else {
            sink += 4; // expect: 3
        }
    }
    return retry(5) == 3 ? 0 : 1;
}
