/* Trace mode with several runtime copies in one process: this executable, libtraceimages.so (linked) and
   libtraceplugin.so (dlopen'ed), each built with pathprof-clang and so each with its own hidden runtime copy.
   Calls go from the executable into the library and back (apply's callback), from a second thread too, and
   into the plugin; every copy's streams must land in the one trace file and regenerate exactly.
   Usage: main [PLUGIN [COMMAND]]: COMMAND runs (system) halfway through, e.g. another traced process that
   writes the same trace file. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int classify(int i);
int apply(int (*f)(int), int n);

static int twice(int v) {
  if (v > 1)
    return 2 * v;
  return v;
}

static void *worker(void *arg) {
  long n = (long)arg;
  return (void *)(long)apply(twice, (int)n);
}

int main(int argc, char **argv) {
  long s = 0;
  for (int i = 0; i < 20; i++)
    s += classify(i) == 1 ? 10 : 1;
  pthread_t t;
  pthread_create(&t, 0, worker, (void *)30L);
  void *r;
  pthread_join(t, &r);
  s += (long)r + apply(twice, 7);
  if (argc > 2 && system(argv[2]) != 0)
    return 4;
  const char *plugin = argc > 1 ? argv[1] : "./libtraceplugin.so";
  void *h = dlopen(plugin, RTLD_NOW);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  int (*scale)(int) = (int (*)(int))dlsym(h, "plugin_scale");
  for (int i = 0; i < 9; i++)
    s += scale(i);
  printf("%ld\n", s);
  return 0;
}
