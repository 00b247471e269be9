/* A plugin dlopen'ed by plugin_host.c, built as a shared object with its own runtime copy. */
int plugin_f(int x) {
    if (x & 1)
        return x * 3; // expect: 5
    return x / 2;     // expect: 5
}
