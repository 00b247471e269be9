/* A program that defines its own allocator and getenv, instrumented like the rest of it (bash's lib/malloc and
 * lib/sh/getenv.c). The runtime must not call them: they are the program's functions, and their counts must be
 * the program's calls only. By hand: main calls malloc 3 times, realloc twice (each calls malloc once: malloc
 * has 5 entries, and realloc's `old != NULL` branch is taken both times), free twice and getenv once; nothing
 * calls calloc (0 entries). glibc calls none of them in this program (the plain build's counts, printed with
 * PRINT_COUNTS defined: malloc 5 realloc 2 free 2 getenv 1). Before the fix the runtime's own buffers (realloc/free) and
 * its environment lookups (getenv) ran here: malloc read 33 entries, realloc 29, free 16, getenv 8, all
 * "exact", and every module of such code wrote the whole profile again from its destructor. */
#include <stddef.h>
#include <string.h>
#ifdef PRINT_COUNTS
#include <stdio.h>
#include <unistd.h>
static unsigned long n_malloc, n_realloc, n_free, n_getenv;
#define COUNT(n) (n)++
#else
#define COUNT(n) ((void)0)
#endif

static _Alignas(16) char arena[1 << 16];
static size_t used;

void *malloc(size_t n) {
  COUNT(n_malloc);
  n = (n + 15) & ~(size_t)15;
  if (used + n + 16 > sizeof arena)
    return NULL;
  char *p = arena + used + 16;
  *(size_t *)(p - 16) = n;
  used += n + 16;
  return p;
}

void free(void *p) {
  COUNT(n_free);
  (void)p;
}

void *calloc(size_t a, size_t b) {
  void *p = malloc(a * b);
  if (p)
    memset(p, 0, a * b);
  return p;
}

void *realloc(void *old, size_t n) {
  COUNT(n_realloc);
  void *p = malloc(n);
  if (p && old) {
    size_t o = *(size_t *)((char *)old - 16);
    memcpy(p, old, o < n ? o : n);
  }
  return p;
}

extern char **environ;

char *getenv(const char *name) {
  COUNT(n_getenv);
  size_t k = strlen(name);
  for (char **e = environ; *e; e++)
    if (strncmp(*e, name, k) == 0 && (*e)[k] == '=')
      return *e + k + 1;
  return NULL;
}

#ifdef PRINT_COUNTS
__attribute__((destructor)) static void print_counts(void) {
  char b[128];
  int n = snprintf(b, sizeof b, "malloc %lu realloc %lu free %lu getenv %lu\n", n_malloc, n_realloc, n_free, n_getenv);
  write(1, b, (size_t)n);
}
#endif

int main(void) {
  char *a = malloc(10), *b = malloc(20), *c = malloc(30);
  a = realloc(a, 100);
  b = realloc(b, 200);
  free(a);
  free(b);
  return getenv("PATH") != NULL && c != NULL ? 0 : 1;
}
