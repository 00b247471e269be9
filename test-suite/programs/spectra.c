/* Hand-derived path, line and branch counts for `pathprof top`, `diff` and `coverage` (at -O0, where the graph
 * follows the source). The program runs classify(i) for i in [0, n), n = 12 / argc; argc chooses the run:
 *
 *   run A (no argument, n = 12)            run B (one argument, n = 6)
 *   classify: x < 6 and x % 4 == 0 : 2 {0,4}    2 {0,4}
 *             x < 6 only           : 4 {1,2,3,5} 4 {1,2,3,5}
 *             x >= 6 and x % 4 == 0: 1 {8}       0
 *             x >= 6 only          : 5 {6,7,9,10,11} 0
 *   main:     entry to back edge   : 1           1
 *             loop header to back edge: 11       5
 *             header to exit, argc > 1 false: 1  0
 *             header to exit, argc > 1 true : 0  1
 *
 * Path executions: A 12 + 13 = 25, B 6 + 7 = 13. Possible Ball-Larus paths: classify 2 x 2 = 4; main 6 (from
 * the entry or the loop header: into the loop body, or out past the if with or without its then-block).
 * test-suite/tests/views.rs derives the shares, line and branch counts from these. */
static volatile int sink;

__attribute__((noinline)) void classify(int x) {
    if (x < 6)
        sink += 1; /* low */
    else
        sink += 2; /* high */
    if (x % 4 == 0)
        sink += 4; /* quad */
} /* end of classify */

int main(int argc, char **argv) {
    int n = 12 / argc;
    for (int i = 0; i < n; i++)
        classify(i); /* call */
    if (argc > 1)
        sink = 0; /* argument */
    return 0;
}
