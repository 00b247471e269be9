/* Storage units of the interprocedural modes (pathprof_core::interproc::units): the functions below form four
 * runs that no followed call crosses — {scale, walk}, {pick, branchy}, {forked}, {main} — because main calls
 * walk, branchy and forked through a table of function pointers (calls the pass does not follow, so those three
 * are roots). Each unit counts its paths, numbered from 0 within it, in storage of its own: forced small arrays
 * (`PATHPROF_PATH_ARRAY_MAX`) put branchy's 2^10-path unit in a hash table and the others in the dense array.
 * forked() forks in the third unit: the child resumes its path there (a re-entry, recorded with the unit's local
 * path number), returns 7 and finishes main as the parent does, and both processes write the profile.
 * Hand-derived counts, merged: walk(6) twice, branchy(i) for i = 0..39, forked(0) once in the parent and resumed
 * once in the child (fork's block and main's block after the call count both).
 */
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) static int scale(int x) {
    if (x & 1) // expect: 12
        return 3 * x; // expect: 6
    return x / 2; // expect: 6
}

__attribute__((noinline)) int walk(int n) {
    int s = 0; // expect: 2
    for (int i = 0; i < n; i++)
        s += scale(i); // expect: 12
    return s; // expect: 2
}

__attribute__((noinline)) static int pick(int v) {
    return v > 20 ? 1 : 2; // expect: 40
}

__attribute__((noinline)) int branchy(int v) {
    int s = pick(v); // expect: 40
    if (v & 1) s += 1; // expect: 40
    if (v & 2) s += 2; // expect: 40
    if (v & 4) s += 3; // expect: 40
    if (v & 8) s += 4; // expect: 40
    if (v & 16) s += 5; // expect: 40
    if (v % 3 == 0) s += 6; // expect: 40
    if (v % 5 == 0) s += 7; // expect: 40
    if (v % 7 == 0) s += 8; // expect: 40
    if (v % 9 == 0) s += 9; // expect: 40
    if (v % 11 == 0) s += 10; // expect: 40
    return s; // expect: 40
}

__attribute__((noinline)) int forked(int v) {
    pid_t pid = fork(); // expect: 2
    if (pid == 0)
        return v + 7; // expect: 1
    if (pid > 0) // expect: 1
        waitpid(pid, 0, 0); // expect: 1
    return v + 1; // expect: 1
}

int (*volatile table[3])(int) = {walk, branchy, forked};

int main(void) {
    sink += table[0](6) + table[0](6); // expect: 1
    for (int i = 0; i < 40; i++)
        sink += table[1](i); // expect: 40
    sink += table[2](0); // expect: 2
    return 0; // expect: 2
}
