#include "odr_inline.h"
int other(int x) {
    int s = 0;
    for (int i = 0; i < x; i++)
        s += twice(i); // expect: 45
    return s;
}
