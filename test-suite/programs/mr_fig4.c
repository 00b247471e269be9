// Melski & Reps, Interprocedural Path Profiling (CC 1999), Figure 4 (pow renamed: libm owns `pow`).
// Context profile: 16:1 18:9 24:9 25:3 27:3 28:3 29:6 30:3 32:3 33:3 34:5 35:1; piecewise: 6:1 8:9 12:3 14:5
// 15:1 16:15 17:3 19:6 20:6 (paper, section 3.3 and Fig. 16/17 output).
static double power(double base, long exp) {
    double p = 1.0;
    while (exp > 0) { p *= base; exp--; }
    return p;
}
int main(void) {
    double t, result = 0.0; int i = 1;
    while (i <= 18) {
        if ((i % 2) == 0) { t = power(i, 2); result += t; }
        if ((i % 3) == 0) { t = power(i, 2); result += t; }
        i++;
    }
    return 0;
}
