// An exception thrown two frames deep (i = 0, 4, 8: 3 of 10 iterations) and caught in main.
static volatile int sink;
__attribute__((noinline)) void thrower(int i) {
    if (i % 4 == 0)
        throw i;
    sink++; // expect: 7
}
__attribute__((noinline)) void middle(int i) {
    thrower(i);
    sink += 2; // expect-out: 7
}

int main() {
    for (int i = 0; i < 10; i++) {
        try {
            middle(i);
            sink += 3; // expect-out: 7
        } catch (int) {
            sink += 4; // expect: 3
        }
    }
    return 0;
}
