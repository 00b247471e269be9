// A module whose only function cannot be instrumented (asm goto): the profile must still name it.
int asm_only(int x) {
    asm goto("cmpl $2, %0\n\tje %l1" : : "r"(x) : "cc" : two);
    return 0;
two:
    return 5;
}
