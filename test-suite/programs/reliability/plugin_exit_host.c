/* dlopen()s ./libplugin.so (a shared object with its own runtime copy), calls plugin_f and own() 10 times each,
 * and ends with _exit(0), which runs no exit handlers: each runtime copy must write its own modules before it
 * (plugin_f 10, own 10). With argv[1] = "fork" a fork()ed child first calls plugin_f once more and _exits
 * (plugin_f 11 in all). Prints 85. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) void own(int i) {
    if (i & 1)
        sink++;
}

int main(int argc, char **argv) {
    void *h = dlopen("./libplugin.so", RTLD_NOW);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    int (*f)(int) = (int (*)(int))dlsym(h, "plugin_f");
    int s = 0;
    for (int i = 0; i < 10; i++) {
        s += f(i);
        own(i);
    }
    if (argc > 1 && !strcmp(argv[1], "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            f(1);
            _exit(0);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid)
            return 2;
    }
    printf("%d\n", s);
    fflush(stdout);
    _exit(0);
}
