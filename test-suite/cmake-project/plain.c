/* Not instrumented: must not appear in the profile. */
int plain_twice(int x) {
    int y = 0;
    for (int i = 0; i < 2; i++)
        y += x;
    return y;
}
