// See use_tu_a.cpp.
inline int twice(int x) { return x > 100 ? x : 2 * x; }
static int helper(int x) { return x > 1 ? twice(x) : x; }
int from_b(int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += helper(i + 2);
    return s;
}
