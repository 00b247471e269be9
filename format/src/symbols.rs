//! The names of the symbols pathprof adds to a program, in one place (`no_std`): the pass emits references to
//! the runtime's entry points and defines its own module-local symbols under these names, and the runtime
//! defines the entry points. The runtime's `#[no_mangle]` names cannot come from a constant, so
//! `test-suite/tests/hygiene.rs` checks that its archive defines exactly [`RUNTIME`] and that instrumented
//! objects define none of their `__pathprof_*` symbols globally.

/// The prefix of every symbol below: the pass never instruments a function so named.
pub const PREFIX: &str = "__pathprof_";

/// Runtime: `void __pathprof_register_module(ModuleDesc *)`, called by each instrumented module's constructor.
pub const REGISTER_MODULE: &str = "__pathprof_register_module";
/// Runtime: `void __pathprof_unregister_module(ModuleDesc *)`, merges one module's counts into the profile and
/// forgets it. The pass emits no call to it (a shared object's runtime copy dumps its modules at `dlclose`).
pub const UNREGISTER_MODULE: &str = "__pathprof_unregister_module";
/// Runtime, public (`include/pathprof.h`): `int __pathprof_dump(void)`, merges the counts into the profile.
pub const DUMP: &str = "__pathprof_dump";
/// Runtime, public (`include/pathprof.h`): `void __pathprof_reset(void)`, zeroes the counts.
pub const RESET: &str = "__pathprof_reset";
/// Runtime: `void __pathprof_path_add(PathTable *, uint64_t path, int64_t delta)`, the compare-and-swap (or
/// locked) update of a path table, called by atomic builds (whose tables have no cache).
pub const PATH_ADD: &str = "__pathprof_path_add";
/// Runtime: [`PATH_ADD`] with a plain-store fast path, called by non-atomic builds for tables without a cache.
pub const PATH_ADD_PLAIN: &str = "__pathprof_path_add_plain";
/// Runtime: `void __pathprof_path_cache_miss(PathTable *, uint64_t path, int64_t delta)`, called by the
/// inlined cache update ([`CACHED_ADD`]) when the cache pair holds another path.
pub const PATH_CACHE_MISS: &str = "__pathprof_path_cache_miss";
/// Runtime: `void __pathprof_path_cache_claim(PathTable *, uint64_t path, int64_t delta)`, called by an atomic
/// build's inlined cache update ([`CACHED_ADD_ATOMIC`]) when the cache pair does not hold the path.
pub const PATH_CACHE_CLAIM: &str = "__pathprof_path_cache_claim";
/// Runtime: `uint64_t *__pathprof_region_counters(uint64_t **cell, uint64_t len)`, a sparse region's counters,
/// mapped now when instrumented code runs before its module registered (`SparseRegion`).
pub const REGION_COUNTERS: &str = "__pathprof_region_counters";
/// Runtime variable: `uint64_t __pathprof_fork_gen`, the process's fork generation, moved on in each `fork()`ed
/// child; instrumented code compares it before and after calls that may fork.
pub const FORK_GEN: &str = "__pathprof_fork_gen";
/// Runtime: `void __pathprof_fork_reentry(ModuleDesc *, uint64_t packed, uint64_t key)`, records that a
/// `fork()`ed child resumed an activation it never entered.
pub const FORK_REENTRY: &str = "__pathprof_fork_reentry";

/// Runtime: `void __pathprof_trace_register(TraceModuleDesc *)`, called by each trace-mode module's
/// constructor; assigns the module's trace ids (`trace_layout`).
pub const TRACE_REGISTER: &str = "__pathprof_trace_register";
/// `sigaction` for instrumented code (the pass redirects the module's calls): the program's handler runs behind
/// a trampoline that notices a handler that never returns, which makes the counts inexact.
pub const SIGACTION: &str = "__pathprof_sigaction";
/// Runtime: `void __pathprof_image_end(uint32_t how)`, called right before every call of a function that ends
/// the process image without `atexit` handlers (`exec*`, `daemon`: [`IMAGE_END_EXEC`]; `_exit`, `_Exit`:
/// [`IMAGE_END_EXIT`]): writes what `exit` would. (`quick_exit` runs the runtime's `at_quick_exit` handler,
/// after the program's own.)
pub const IMAGE_END: &str = "__pathprof_image_end";
/// [`IMAGE_END`]'s argument for a call that may return: `exec*` (it may fail), `daemon` (its parent `_exit`s
/// inside the C library; the child returns).
pub const IMAGE_END_EXEC: u32 = 0;
/// [`IMAGE_END`]'s argument for `_exit` and `_Exit`.
pub const IMAGE_END_EXIT: u32 = 1;
/// The C library's functions that end the process image without running `atexit` handlers, with the
/// [`IMAGE_END`] argument for each.
pub const IMAGE_ENDERS: [(&str, u32); 12] = [
    ("daemon", IMAGE_END_EXEC),
    ("execl", IMAGE_END_EXEC),
    ("execle", IMAGE_END_EXEC),
    ("execlp", IMAGE_END_EXEC),
    ("execv", IMAGE_END_EXEC),
    ("execve", IMAGE_END_EXEC),
    ("execveat", IMAGE_END_EXEC),
    ("execvp", IMAGE_END_EXEC),
    ("execvpe", IMAGE_END_EXEC),
    ("fexecve", IMAGE_END_EXEC),
    ("_exit", IMAGE_END_EXIT),
    ("_Exit", IMAGE_END_EXIT),
];
/// `_Fork` for instrumented code (the pass redirects the module's calls): the runtime runs its fork handlers,
/// which `_Fork` skips, around it, so that a child's counts and trace stay exact.
pub const FORK_RAW: &str = "__pathprof__Fork";
/// `clone` for instrumented code (the pass redirects the module's calls): a child that does not share its
/// parent's memory (no `CLONE_VM`) is a fork child, whose counts must start at zero and be written when it ends.
pub const CLONE: &str = "__pathprof_clone";
/// Runtime: `void __pathprof_confine(int64_t what, int64_t mode)`, called right before each call of `prctl`
/// (`what`, `mode`: its first two arguments) and of libseccomp's `seccomp_load` (`what` = -1): a call that puts
/// the process in a seccomp sandbox gets the counts written first, since no write can follow it.
pub const CONFINE: &str = "__pathprof_confine";
/// `signal` for instrumented code, like [`SIGACTION`].
pub const SIGNAL: &str = "__pathprof_signal";
/// `syscall` for instrumented code (the pass redirects the module's calls): a `fork`, `clone` or `clone3`
/// system call whose child does not share its parent's memory gets the runtime's fork handlers, as [`CLONE`].
pub const SYSCALL: &str = "__pathprof_syscall";
/// Runtime: `void __pathprof_trace_unregister(TraceModuleDesc *)`, a trace-mode module's destructor: makes sure
/// its metadata is in the trace before the image goes away.
pub const TRACE_UNREGISTER: &str = "__pathprof_trace_unregister";
/// Runtime: `void __pathprof_trace_spill_word(uint64_t *tls, uint64_t word, uint64_t rest, uint64_t nacc)`, takes
/// a full word of the thread's bits and stores the state's bits after it (`rest`, `nacc` of them) itself.
pub const TRACE_SPILL: &str = "__pathprof_trace_spill_word";
/// Runtime: `uint64_t __pathprof_trace_first(uint64_t *tls)`, an entry found the thread state even: registers
/// a new thread (returns its top-level state) or records an abnormal transfer.
pub const TRACE_FIRST: &str = "__pathprof_trace_first";
/// Runtime: `void __pathprof_trace_abnormal(uint64_t *tls)`, a call site returned to a state not its own
/// (`longjmp`, an exception): the trace is regenerable only up to here.
pub const TRACE_ABNORMAL: &str = "__pathprof_trace_abnormal";
/// Runtime: `void __pathprof_trace_landing(uint64_t *tls, uint64_t site, uint64_t body, uint64_t sp, uint64_t
/// id, uint64_t from)`, a `longjmp` came back to a `setjmp` whose call site's state is `site` (its activation's
/// body state `body`, its function's trace id `id`) in a frame whose stack pointer is `sp`, from a thread state
/// `from`: when that frame belongs to a stream a signal handler interrupted (the handler left through
/// `siglongjmp`), the thread goes on in that stream's place; when it is none of the running stream's
/// activations (a `longjmp` to another stack), the stream is abnormal there.
pub const TRACE_LANDING: &str = "__pathprof_trace_landing";
/// Runtime: `void __pathprof_trace_sync(uint64_t *tls)`, an entry found a sync wanted (flight recorder): the
/// runtime records where the stream can be read from, with the thread's shadow stack.
pub const TRACE_SYNC: &str = "__pathprof_trace_sync";
/// `swapcontext` for instrumented code in trace mode (the pass redirects the module's calls): the runtime sets
/// the running stream aside under the context it saves and gives the thread the target context's stream, so a
/// coroutine switch never mixes two stacks' activations in one stream (`trace_layout`'s `REC_CONTEXT`).
pub const SWAPCONTEXT: &str = "__pathprof_swapcontext";
/// `setcontext` for instrumented code in trace mode, like [`SWAPCONTEXT`]; the stream switched away from ends.
pub const SETCONTEXT: &str = "__pathprof_setcontext";
/// Runtime: `void __pathprof_trace_made_context(ucontext_t *ucp)`, called right after every call of
/// `makecontext` in trace mode: the next switch to `ucp` starts a stream of its own at its top level.
pub const TRACE_MADE_CONTEXT: &str = "__pathprof_trace_made_context";
/// Runtime and public API (`pathprof.h`): `void __pathprof_trace_start(void)`, the calling thread's trace
/// (re)starts here, with a sync record.
pub const TRACE_START: &str = "__pathprof_trace_start";
/// Runtime and public API (`pathprof.h`): `void __pathprof_trace_stop(void)`, the calling thread's trace
/// stops here (nothing is written until the next start).
pub const TRACE_STOP: &str = "__pathprof_trace_stop";

/// Every symbol the runtime archive defines, sorted: its whole ABI with instrumented code and programs.
pub const RUNTIME: [&str; 30] = [
    FORK_RAW,
    CLONE,
    CONFINE,
    DUMP,
    FORK_GEN,
    FORK_REENTRY,
    IMAGE_END,
    PATH_ADD,
    PATH_ADD_PLAIN,
    PATH_CACHE_CLAIM,
    PATH_CACHE_MISS,
    REGION_COUNTERS,
    REGISTER_MODULE,
    RESET,
    SETCONTEXT,
    SIGACTION,
    SIGNAL,
    SWAPCONTEXT,
    SYSCALL,
    TRACE_ABNORMAL,
    TRACE_FIRST,
    TRACE_LANDING,
    TRACE_MADE_CONTEXT,
    TRACE_REGISTER,
    TRACE_SPILL,
    TRACE_START,
    TRACE_STOP,
    TRACE_SYNC,
    TRACE_UNREGISTER,
    UNREGISTER_MODULE,
];

/// Module-local: the module's dense counter array.
pub const COUNTERS: &str = "__pathprof_counters";
/// Module-local: the module's encoded metadata (`meta::ModuleMeta`), which the descriptor points to.
pub const META: &str = "__pathprof_meta";
/// Module-local: the module's [`ModuleDesc`](crate::layout::ModuleDesc).
pub const DESC: &str = "__pathprof_desc";
/// Module-local: the constructor that calls [`REGISTER_MODULE`].
pub const MODULE_CTOR: &str = "__pathprof_module_ctor";
/// Module-local: the destructor that calls [`UNREGISTER_MODULE`], so an image that goes away (`dlclose`) never
/// leaves its descriptor on a runtime copy that outlives it.
pub const MODULE_DTOR: &str = "__pathprof_module_dtor";
/// Module-local: the word holding the address of a sparse function's counters, which the runtime maps (LLVM
/// numbers the copies).
pub const REGION: &str = "__pathprof_region";
/// Module-local: the array of [`SparseRegion`](crate::layout::SparseRegion)s the descriptor points to.
pub const REGIONS: &str = "__pathprof_regions";
/// Module-local: the array of [`PathTable`](crate::layout::PathTable)s the descriptor points to.
pub const TABLES: &str = "__pathprof_tables";
/// Module-local: the cache pairs of one path table (LLVM numbers the copies).
pub const TABLE_CACHE: &str = "__pathprof_table_cache";
/// Module-local, `alwaysinline`: a path table's cached update, calling [`PATH_CACHE_MISS`] on a miss.
pub const CACHED_ADD: &str = "__pathprof_cached_add";
/// Module-local, `alwaysinline`: an atomic build's cached update (sticky pairs), calling [`PATH_CACHE_CLAIM`]
/// on a miss.
pub const CACHED_ADD_ATOMIC: &str = "__pathprof_cached_add_atomic";
/// Module-local: the cold thunk that calls [`FORK_REENTRY`] with the module's descriptor.
pub const FORK_REENTRY_HERE: &str = "__pathprof_fork_reentry_here";
/// Module-local, thread-local: the path number handed between caller and callee (context and piecewise modes).
pub const IP_PATH: &str = "__pathprof_ip_path";
/// Module-local, thread-local: the number of valid completions handed from caller to callee (same modes).
pub const IP_NVC: &str = "__pathprof_ip_nvc";
/// Module-local, thread-local: the callee a caller announced (same modes).
pub const IP_TOKEN: &str = "__pathprof_ip_token";
/// Module-local: swaps the thread's hand-over ([`IP_PATH`], [`IP_NVC`], [`IP_TOKEN`]) with three words, for the
/// runtime's signal trampoline (`ModuleDesc::ip_swap`).
pub const IP_SWAP: &str = "__pathprof_ip_swap";

/// Module-local, `alwaysinline`: appends bits to the thread's trace state (trace mode).
pub const TRACE_PUT: &str = "__pathprof_trace_put";
/// Module-local, `noinline cold`: [`TRACE_PUT`] when the bits fill the thread's word (the runtime takes it);
/// returns the new bits and their count for the caller to store.
pub const TRACE_PUT_FULL: &str = "__pathprof_trace_put_full";
/// Module-local, `alwaysinline`: a deferred loop's bits at its exit (`count` stay bits, then the exit bit).
pub const TRACE_PUT_LOOP: &str = "__pathprof_trace_put_loop";
/// Module-local, `noinline`: [`TRACE_PUT_LOOP`] for 32 stays or more, 32 bits at a time.
pub const TRACE_PUT_LOOP_LONG: &str = "__pathprof_trace_put_loop_long";
/// Module-local, `alwaysinline`: a traced function's entry (state check, `Enter` marker).
pub const TRACE_ENTER: &str = "__pathprof_trace_enter";
/// Module-local, `alwaysinline`: a call site's return (state check, `Done` marker).
pub const TRACE_DONE: &str = "__pathprof_trace_done";
/// Module-local, `alwaysinline`: a direct call site's return (no `Done` after its announced callee's return).
pub const TRACE_DONE_DIRECT: &str = "__pathprof_trace_done_direct";
/// Module-local, `alwaysinline`: an activation's id through the thread's entry cache (trace mode).
pub const TRACE_CACHED: &str = "__pathprof_trace_cached";
/// Module-local, `alwaysinline`: a certain call site's return (state and announcement checks, no marker).
pub const TRACE_DONE_CERTAIN: &str = "__pathprof_trace_done_certain";
/// Module-local, `alwaysinline`: a `setjmp` call's return (`Done`, or a resync marker after a `longjmp`).
pub const TRACE_RESYNC: &str = "__pathprof_trace_resync";
/// Module-local, `noinline cold`: a landing pad's start (the unwind marker, the activation's body state back).
pub const TRACE_UNWIND: &str = "__pathprof_trace_unwind";
/// Module-local, `noinline cold`: a call site's return to a state not its own (abandon marker or abnormal).
pub const TRACE_DONE_MOVED: &str = "__pathprof_trace_done_moved";
/// Module-local, `noinline cold`: the resync marker of a `setjmp` call's return after a `longjmp`.
pub const TRACE_RESYNC_AGAIN: &str = "__pathprof_trace_resync_again";
/// Module-local, `noinline`: an entry other than its announced one (marker with the function's id, checks).
pub const TRACE_ENTER_SLOW: &str = "__pathprof_trace_enter_slow";
/// Module-local: a trace-mode module's [`TraceModuleDesc`](crate::trace_layout::TraceModuleDesc).
pub const TRACE_DESC: &str = "__pathprof_trace_desc";
/// Image-wide (hidden, `linkonce_odr`, thread-local): the thread's trace state
/// ([`TLS_WORDS`](crate::trace_layout::TLS_WORDS) words), shared by every trace-mode module of an image so one
/// thread writes one stream.
pub const TRACE_TLS: &str = "__pathprof_trace_tls";

/// Every symbol the pass defines in an instrumented module, none of them visible outside it.
pub const MODULE_LOCAL: [&str; 31] = [
    COUNTERS,
    META,
    DESC,
    MODULE_CTOR,
    MODULE_DTOR,
    REGION,
    REGIONS,
    TABLES,
    TABLE_CACHE,
    CACHED_ADD,
    CACHED_ADD_ATOMIC,
    FORK_REENTRY_HERE,
    IP_PATH,
    IP_NVC,
    IP_TOKEN,
    IP_SWAP,
    TRACE_PUT,
    TRACE_ENTER,
    TRACE_DONE,
    TRACE_DONE_CERTAIN,
    TRACE_DONE_DIRECT,
    TRACE_CACHED,
    TRACE_RESYNC,
    TRACE_UNWIND,
    TRACE_DONE_MOVED,
    TRACE_RESYNC_AGAIN,
    TRACE_ENTER_SLOW,
    TRACE_PUT_FULL,
    TRACE_PUT_LOOP,
    TRACE_PUT_LOOP_LONG,
    TRACE_DESC,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_distinct_and_runtime_sorted() {
        let all: Vec<&str> = RUNTIME.iter().chain(MODULE_LOCAL.iter()).chain([&TRACE_TLS]).copied().collect();
        for (i, n) in all.iter().enumerate() {
            assert!(n.starts_with(PREFIX) && n.len() > PREFIX.len(), "{n}");
            assert!(!all[..i].contains(n), "{n} twice");
        }
        assert!(RUNTIME.windows(2).all(|w| w[0] < w[1]), "RUNTIME is sorted");
    }
}
