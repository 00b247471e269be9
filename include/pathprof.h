/*===- pathprof.h - public API of the pathprof runtime -------------------===*\
 *
 * Programs built with pathprof-clang / pathprof-clang++ link the pathprof
 * runtime (libpathprof_rt.a), which writes the profile when the program
 * exits. This header lets a program control that explicitly, for example to
 * profile one phase of a server that never exits.
 *
 * Output file: $PATHPROF_FILE (an empty value counts as unset), default
 * "default.pathprof". Patterns as in LLVM_PROFILE_FILE: %p pid, %h host name,
 * %m a per-binary signature, %t $TMPDIR, %% a literal percent sign. Every
 * write merges into the existing file under a lock, so concurrent processes
 * (make -j, fork()) add up. PATHPROF_VERBOSE=1 prints what was written.
 *
 * One runtime per image: an instrumented executable and each instrumented
 * shared object linked by pathprof-clang carry their own (hidden) copy of the
 * runtime, as with compiler-rt's profile runtime. __pathprof_dump() and
 * __pathprof_reset() act on the modules of the image they are called from.
 *
 * Neither function is async-signal-safe.
 *
\*===----------------------------------------------------------------------===*/

#ifndef PATHPROF_H
#define PATHPROF_H

/* Define PATHPROF_WEAK_API before including this header to declare the API
 * weak: the program then links with or without the runtime, and the
 * pathprof_*_if_linked() helpers below call it only when it is present. For
 * example, in code built both with and without pathprof:
 *
 *     #define PATHPROF_WEAK_API
 *     #include <pathprof.h>
 *     ...
 *     pathprof_dump_if_linked();   // no-op in an uninstrumented build
 */
#if defined(PATHPROF_WEAK_API) && (defined(__GNUC__) || defined(__clang__))
#define PATHPROF_API_ATTR __attribute__((weak))
#else
#define PATHPROF_API_ATTR
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** \brief Write the counts accumulated since the last dump or reset.
 *
 * Merges them into the profile file (adding to what is there) and zeroes
 * them in memory, so the file always holds the total and the dump at exit
 * adds only what happened since. This includes the path counts of path-mode
 * functions kept in hash tables. Counters updated atomically (built with
 * --pathprof-atomic) are read and zeroed atomically: concurrent increments
 * are never lost.
 *
 * \return 0 on success; -1 if the profile could not be written, after one
 * warning line on stderr ("pathprof: warning: cannot write profile ...").
 * The counts then stay in memory for a later dump. Never aborts the program.
 */
PATHPROF_API_ATTR int __pathprof_dump(void);

/** \brief Zero all counters (and hash-table path counts) without writing
 * anything.
 *
 * Use it to exclude a phase (start-up, warm-up) from the profile.
 */
PATHPROF_API_ATTR void __pathprof_reset(void);

/* __pathprof_register_module(), __pathprof_unregister_module() and
 * __pathprof_path_add() are also exported by the runtime; they are called by
 * compiler-generated code (module constructors and destructors, path-mode
 * counting), never by programs. */

#if defined(PATHPROF_WEAK_API) && (defined(__GNUC__) || defined(__clang__))
/** \brief __pathprof_dump() if the runtime is linked, else 0. */
static inline int pathprof_dump_if_linked(void) {
  return __pathprof_dump ? __pathprof_dump() : 0;
}

/** \brief __pathprof_reset() if the runtime is linked, else nothing. */
static inline void pathprof_reset_if_linked(void) {
  if (__pathprof_reset)
    __pathprof_reset();
}
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PATHPROF_H */
