/* Two translation units: main here, helpers in two_tu_util.c. */
int square(int x);
int clamp(int x, int lo, int hi);

int main(void) {
    int s = 0;
    for (int i = -50; i < 50; i++)
        s += clamp(square(i), 0, 1000); // expect: 100
    return s == 0;
}
