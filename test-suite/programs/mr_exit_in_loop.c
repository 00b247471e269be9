// exit() from inside a callee's loop, two calls deep: in piecewise mode the piece that ends at exit() began at
// the callee's loop header, so it does not name the calls that are still open (main -> run -> spin); their
// abnormal departures must still be counted.
#include <stdlib.h>
static volatile int sink;
static void spin(int n) {
    for (int i = 0; i < n; i++) {
        if (i == 7)
            exit(0);
        sink += i;
    }
}
static void run(int n) {
    spin(n);
    sink += 1;
}
int main(void) {
    for (int k = 0; k < 3; k++)
        run(k == 2 ? 20 : 5);
    return 1; /* never reached */
}
