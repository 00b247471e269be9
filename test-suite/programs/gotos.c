/* gotos, including a jump into the middle of a loop (an irreducible CFG). */
static volatile int sink;

int main(int argc, char **argv) {
    (void)argv;
    int i = 0, evens = 0, odds = 0;
top:
    if (i >= 100)
        goto done;
    if (i & 1)
        goto odd_case;
    evens++; // expect: 50
    goto next;
odd_case:
    odds++; // expect: 50
next:
    i++;
    goto top;
done:;
    int n = 0, m = 0;
    if (argc > 5)
        goto inside;
    while (n < 10) {
        n++; // expect: 10
    inside:
        m++; // expect: 10
    }
    sink = evens + odds + m;
    return 0;
}
