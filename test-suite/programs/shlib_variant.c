/* One source, two shared objects: shlib_variant_main.c runs it built with -DSTEP=2 into libstep2.so (linked)
 * over n = 30 values and built with -DSTEP=3 into libstep3.so (dlopen'ed) over n = 12. Both objects define `run`
 * and a static `pick`, same names, same shapes. Per object: run is entered once, pick n times, and pick's
 * first return is taken for the multiples of STEP below n (15 of 30; 4 of 12). With -DEXTRA (the "rebuild"),
 * pick also returns 3 for i == 7 (once, as 7 is neither even nor a multiple of 3). */
#ifndef STEP
#error "build with -DSTEP=N"
#endif

static __attribute__((noinline)) int pick(int i) {
    if (i % STEP == 0)
        return 1;
#ifdef EXTRA
    if (i == 7)
        return 3;
#endif
    return 2;
}

int run(int n) {
    int s = 0;
    for (int i = 0; i < n; i++)
        s += pick(i);
    return s;
}
