/* A switch whose cases share targets: parallel CFG edges. i in [0,120): i%6 in {0,3} 40 times, {1,4,5} 60, 2 20. */
static volatile int sink;
__attribute__((noinline)) void a(void) { sink += 1; }
__attribute__((noinline)) void b(void) { sink += 2; }
__attribute__((noinline)) void c(void) { sink += 3; }

int main(void) {
    for (int i = 0; i < 120; i++) {
        switch (i % 6) {
        case 0:
        case 3:
            a(); // expect: 40
            break;
        case 1:
        case 4:
        case 5:
            b(); // expect: 60
            break;
        default:
            c(); // expect: 20
        }
    }
    return 0;
}
