/* The C library function trace_libc_named.c calls, defined by the program (over a table of its own, not the
 * environment). */
#include <string.h>

static const char *table[][2] = {{"PP_ONE", "17"}, {"PP_TWO", "5"}};

char *getenv(const char *name) {
    for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i][0], name) == 0)
            return (char *)table[i][1];
    return 0;
}
