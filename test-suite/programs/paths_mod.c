/* Path counts by arithmetic: i in [0,300), two independent branches per iteration (i%3==0, i%5==0).
 * Each iteration is one loop-body path (from the loop header to the back edge):
 *   both taken  : i%15==0          -> 20
 *   only %3     : i%3==0, i%5!=0   -> 100 - 20 = 80
 *   only %5     : i%5==0, i%3!=0   -> 60 - 20 = 40
 *   neither     :                  -> 300 - 20 - 80 - 40 = 160  */
static volatile int sink;
__attribute__((noinline)) void three(void) { sink += 3; }
__attribute__((noinline)) void five(void) { sink += 5; }

int main(void) {
    for (int i = 0; i < 300; i++) {
        if (i % 3 == 0)
            three();
        if (i % 5 == 0)
            five();
    }
    return 0;
}
