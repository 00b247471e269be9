/* dlopen()s ./libplugin.so, calls plugin_f 10 times, dlclose()s it, sleeps 300 ms (interval-timer ticks may
 * run meanwhile), then faults if argv[1] is "crash". With PATHPROF_SIGNALS or PATHPROF_DUMP_INTERVAL the
 * plugin's runtime copy stays mapped after dlclose, so its handler and timer thread never run unmapped code. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    void *h = dlopen("./libplugin.so", RTLD_NOW);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    int (*f)(int) = (int (*)(int))dlsym(h, "plugin_f");
    int s = 0;
    for (int i = 0; i < 10; i++)
        s += f(i);
    dlclose(h);
    usleep(300000);
    printf("%d\n", s);
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "crash")) {
        volatile int *p = (volatile int *)getenv("PATHPROF_TEST_NEVER_SET");
        *p = 1;
    }
    return 0;
}
