/* Opens ./libdl_lib.so, calls work(10), closes it; twice. Linked by hand without --exclude-libs and with
 * -rdynamic, the library's modules register with the program's exported runtime copy; each module's
 * destructor must unregister it at dlclose, or the exit dump reads the unmapped descriptor. */
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
    int total = 0;
    for (int round = 0; round < 2; round++) {
        void *h = dlopen("./libdl_lib.so", RTLD_NOW);
        if (!h) {
            printf("dlopen: %s\n", dlerror());
            return 3;
        }
        int (*work)(int) = (int (*)(int))dlsym(h, "work");
        total += work(10); // expect: 2
        dlclose(h);
    }
    printf("%d\n", total);
    return total == 90 ? 0 : 1;
}
