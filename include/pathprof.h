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
 * Run-time options read at the first module registration (before main):
 *
 *   PATHPROF_SIGNALS=1  On SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT (abort(),
 *     std::terminate) and SIGTERM, write the profile from the signal handler
 *     before the program dies, with every record flagged incomplete (the
 *     frames in flight never finished: counts are a lower bound; `pathprof
 *     show` reports such functions as inexact). The handler uses no malloc
 *     (memory comes from mmap), calls the handler that was installed before
 *     it, if any, or else restores the default action and re-raises: the
 *     program's exit status and core dump are unchanged. If another process
 *     holds the profile's lock, the counts go to FILE.<pid>.incomplete
 *     instead (one warning line). Handlers the program installs later take
 *     precedence. Without this option a program killed by a signal writes no
 *     profile. _exit() and quick_exit() never write one.
 *
 *   PATHPROF_DUMP_INTERVAL=SECONDS  (e.g. 30, 0.5) A background thread, with
 *     all signals blocked, dumps every SECONDS, so the file exists and grows
 *     while a long-running program runs. Exact snapshots of functions that
 *     run concurrently with a dump need atomic counters (--pathprof-atomic);
 *     with non-atomic counters the records are flagged as updated by several
 *     threads. A fork()ed child has no timer thread (it writes at exit).
 *
 * Either option keeps a shared object that carries its own runtime copy
 * loaded until exit (dlclose does not unload it; its counts are written at
 * exit instead).
 *
 * Threads: counters of code built without --pathprof-atomic can lose
 * increments when several threads run it. The runtime flags such records
 * (RECORD_FLAG_THREADED_NONATOMIC, shown as inexact) whenever the process
 * has ever had more than one thread when it dumps.
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

/** \brief Trace mode (--pathprof-mode=trace): the calling thread's trace
 * starts here.
 *
 * Tracing a region only: run with PATHPROF_TRACE_REGION=1 (threads start
 * stopped) and call __pathprof_trace_start() / __pathprof_trace_stop()
 * around the code of interest; without that variable threads start traced
 * and __pathprof_trace_stop() / __pathprof_trace_start() leave a stretch out.
 * Per-thread: each call affects only the calling thread. A start writes a
 * sync record (the thread's call stack), so `pathprof trace` regenerates the
 * region on its own; nothing between a stop and the next start is written.
 * A start while running and a stop while stopped do nothing. Called before
 * the thread's first traced function, start makes the thread start traced.
 * Not async-signal-safe; no effect in other modes.
 */
PATHPROF_API_ATTR void __pathprof_trace_start(void);

/** \brief Trace mode: the calling thread's trace stops here (see
 * __pathprof_trace_start()).
 */
PATHPROF_API_ATTR void __pathprof_trace_stop(void);

/* The runtime also exports these, for compiler-generated code only (their
 * arguments are pathprof's internal data structures, so they are not
 * declared here and programs must not call or modify them):
 *   __pathprof_register_module()    module constructors
 *   __pathprof_unregister_module()  hand-written module destructors
 *   __pathprof_path_add()           path-mode hash-table updates: atomic,
 *   __pathprof_path_add_plain()       non-atomic,
 *   __pathprof_path_cache_miss()      and through the inlined cache
 *   __pathprof_fork_reentry()       a fork()ed child resuming a call
 *   __pathprof_fork_gen             (a variable) the process's fork generation
 * The runtime defines no other global symbol. */

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

/** \brief __pathprof_trace_start() if the runtime is linked, else nothing. */
static inline void pathprof_trace_start_if_linked(void) {
  if (__pathprof_trace_start)
    __pathprof_trace_start();
}

/** \brief __pathprof_trace_stop() if the runtime is linked, else nothing. */
static inline void pathprof_trace_stop_if_linked(void) {
  if (__pathprof_trace_stop)
    __pathprof_trace_stop();
}
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PATHPROF_H */
