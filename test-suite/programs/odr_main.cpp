#include "odr_inline.h"
int main() {
    int s = 0;
    for (int i = 0; i < 10; i++)
        s += twice(i) + other(i); // expect: 10
    return s == 12345;
}
