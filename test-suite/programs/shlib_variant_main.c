/* Calls `run` of libstep2.so (linked) with 30 and `run` of the shared object argv[1] (dlopen'ed, local
 * symbols: libstep3.so) with 12; prints both sums. See shlib_variant.c. */
#include <dlfcn.h>
#include <stdio.h>

int run(int n);

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    int (*run3)(int) = (int (*)(int))dlsym(h, "run");
    int a = run(30);
    int b = run3(12);
    printf("%d %d\n", a, b);
    return 0;
}
