/* Nested branches in a counted loop. Hand-derived: i in [0,1000): i%3==0 for 334 values, i%5==0 for 200. */
static volatile int sink;
__attribute__((noinline)) void by3(void) { sink += 3; }
__attribute__((noinline)) void by5(void) { sink += 5; }
__attribute__((noinline)) void other(void) { sink += 1; }

int main(void) {
    for (int i = 0; i < 1000; i++) {
        if (i % 3 == 0)
            by3(); // expect: 334
        if (i % 5 == 0)
            by5(); // expect: 200
        else
            other(); // expect: 800
    }
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < i; j++)
            sink += j; // expect: 45
    return 0;
}
