/* A library the program dlopens and dlcloses twice (dl_main.c). Hand-derived: work(10) runs the loop body 10
 * times per call, two calls. */
int work(int n) {
    int s = 0;
    for (int i = 0; i < n; i++)
        s += i; // expect: 20
    return s;
}
