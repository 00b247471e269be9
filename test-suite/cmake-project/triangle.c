/* Shared library instrumented in context mode (CMakeLists.txt): its own hidden copy of the runtime.
 * app calls triangle(5) once: the loop body runs 5 times. */
int triangle(int n) {
    int s = 0;                      // expect: 1
    for (int i = 1; i <= n; i++) {
        s += i;                     // expect: 5
    }
    return s;                       // expect: 1
}
