// Use mode across two translation units: both have a `static` helper of the same name and shape, and both use
// the inline function `twice`, whose one kept copy runs for both. Hand-derived: a's helper runs 3 times, b's 5
// times; `twice` runs 8 times.
inline int twice(int x) { return x > 100 ? x : 2 * x; }
static int helper(int x) { return x > 1 ? twice(x) : x; }
int from_b(int n);
int main() {
    int s = 0;
    for (int i = 0; i < 3; i++) s += helper(i + 2);
    return from_b(5) + s == 0;
}
