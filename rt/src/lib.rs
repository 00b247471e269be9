//! pathprof-rt: the runtime linked into every program built by `pathprof-clang`. It keeps the list of
//! instrumented modules and merges their counters into the profile file, at exit and on request.
//!
//! The archive defines exactly the symbols below and nothing else (the rt profile's LTO internalises the rest,
//! and `scripts/rt-archive.sh` makes every other global local). Their names are `pathprof_format::symbols::RUNTIME`, which the pass uses
//! too; `test-suite/tests/hygiene.rs` checks that the archive defines that list.
//!
//! # Called by programs (`include/pathprof.h`)
//! - [`__pathprof_dump`]`() -> int`: merges the counts since the last dump or reset into the profile.
//! - [`__pathprof_reset`]`()`: zeroes them without writing anything.
//!
//! # Called by instrumented code, not by users
//! Their arguments are the pass's data structures (`pathprof_format::layout`), so the header only names them.
//! - [`__pathprof_register_module`]`(desc)`: each instrumented module's constructor (see "Registration").
//! - [`__pathprof_unregister_module`]`(desc)`: merges one module's counts and forgets it; for hand-written
//!   module destructors (the pass emits none, see "Registration").
//! - `__pathprof_path_add(table, path, delta)` and `__pathprof_path_add_plain` (atomic and non-atomic
//!   builds): the path-table update of a path-mode function with too many paths for a dense array, when its
//!   table has no cache (`table`).
//! - `__pathprof_path_cache_miss(table, path, delta)`: called by the inlined cache update when the cache
//!   pair holds another path (`table`); `__pathprof_path_cache_claim(table, path, delta)`, its atomic builds'
//!   twin, which gives an empty pair to the path for good or else updates the table.
//! - `__pathprof_fork_gen` (a `u64` variable) and `__pathprof_fork_reentry(desc, packed, key)`: code
//!   compares the fork generation around calls that may fork and records a re-entry when a `fork()`ed child
//!   resumed the call (`reentry`).
//!
//! # Registration
//! Each instrumented module (translation unit) owns a [`ModuleDesc`] (layout: `pathprof_format::layout`) and
//! calls [`__pathprof_register_module`] from a constructor. Registration pushes the descriptor onto an
//! intrusive lock-free list through `desc->next` with a compare-and-swap: no allocation and no lock, so it is
//! safe before `main`, from several shared objects and from concurrent `dlopen`s. The first registration
//! installs the exit dump with `atexit` and a `pthread_atfork` child handler, once (an atomic flag guards it).
//! The pass also emits a destructor calling [`__pathprof_unregister_module`], which merges the module's counts
//! into the file and unlinks it, so a `dlclose`d library keeps its counts and never leaves a dangling descriptor
//! in a runtime copy it does not own. At exit the destructors run after the `atexit` handlers, the pass's (at
//! priority 1) after the program's own: its merge adds what the program's destructors counted after the exit
//! dump (nothing new: nothing written).
//!
//! # Dumping
//! [`__pathprof_dump`] (also the exit handler) *drains*: it merges the counts accumulated since the last dump or
//! reset into the file and subtracts them from memory, so the file always holds the total and a later dump adds
//! only what happened since. In atomic mode (`DESC_FLAG_ATOMIC`) each counter is read and zeroed with one
//! atomic swap, so increments racing with a dump are never lost; if the file cannot be written the drained
//! values are added back. A process adds 1 to a record's `runs` at its first successful dump of that module,
//! not at every dump. The file protocol, the merge rules and the failure policy are in `dump` and `merge`.
//!
//! # Path tables
//! Path-mode functions with too many paths for a dense array count into per-function hash tables
//! (`ModuleDesc::tables`) through an inlined cache and `__pathprof_path_cache_miss` (atomic builds: sticky pairs
//! and `__pathprof_path_cache_claim`), or `__pathprof_path_add` (`_plain`) without a cache; dumps drain them into the record's sparse entries, and reset, fork and
//! unregistration treat them like counters. Design, locking and the size cap: see `table`.
//!
//! # Fork, threads, exit
//! A `fork()`ed child zeroes its inherited counters (the parent reports everything before the fork) and writes
//! its own counts at its exit; merging under the file lock makes parent and child sum exactly. The child also
//! moves the fork generation on, so that each activation in flight at the fork records one re-entry when it
//! resumes in the child (see `reentry`). A process image that ends without `atexit` handlers — `exec*`,
//! `_exit`, `_Exit` — writes right before the call, which the pass puts in front of every such call
//! ([`__pathprof_image_end`]), so a child that `exec`s or `_exit`s loses nothing. `vfork`/`posix_spawn` run no
//! fork handlers: a `vfork` child shares the parent's memory,
//! so what it runs before `exec`/`_exit` is counted in the parent's profile (the pass treats `vfork` as
//! returning twice, like `setjmp`), and it never flushes on a fatal signal (only the installing process or a
//! `fork()`ed child does); `posix_spawn` children run no instrumented code. Threads still running at exit keep
//! incrementing counters that the exit dump has drained, and their activations are in flight: the dumps at the
//! process's end flag their records when another thread was running (see `in_flight`). The runtime functions
//! serialise on an internal spin lock and are not async-signal-safe.
//!
//! Records of modules built without `--pathprof-atomic` are flagged `RECORD_FLAG_THREADED_NONATOMIC` when the
//! process has ever had more than one thread at a dump (sound detection, false positives allowed: see
//! `threads`).
//!
//! # Abnormal ends and long-running programs
//! Read at the first registration: `PATHPROF_SIGNALS=1` installs fatal-signal handlers that flush the profile
//! async-signal-safely with every record flagged incomplete, then end the program as it would have ended
//! (see `signals`); `PATHPROF_DUMP_INTERVAL=SECONDS` starts a thread that dumps periodically (see `timer`).
//! Either pins a shared object's runtime copy (`RTLD_NODELETE`) so that `dlclose` never unmaps code a handler
//! or the timer thread may run. The runtime lock records its owner, and every holder blocks the six fatal
//! signals while it holds it (only when the handlers are installed), so a flush never waits for a dump of its
//! own thread.
//!
//! # One runtime per linked image
//! `pathprof-clang` links the archive with `--exclude-libs`, so every instrumented executable and shared object
//! carries its own hidden copy, as compiler-rt's profile runtime does: each copy registers, dumps and
//! signs (`%m`) only its own image's modules, and `__pathprof_dump()` called from one image dumps that image.
//! A copy's state lives and dies with its image, so each `dlopen` of a library counts as one run of its modules.
//! Linked without `--exclude-libs`, shared objects interpose one copy and it serves all modules; a `dlclose`d
//! object's destructor unregisters its modules from that copy (before the pass emitted the destructor, the
//! program then crashed at exit reading the unmapped descriptor).
//!
//! # Build
//! The shipped archive is built with `cargo build -p pathprof-rt --profile rt` (`panic = "abort"`) and then
//! reduced by `scripts/rt-archive.sh` to the objects the `__pathprof_*` entry points need, with no other global
//! definition (cargo bundles the compiler-builtins crate, whose `__muldc3`, `fmod`, … must not take the place
//! of the toolchain's and the C library's); `scripts/build.sh` does both. Built `panic = "abort"`, the
//! crate is freestanding and defines its own panic handler, which calls `abort()`. No code path is meant to
//! reach it: the runtime indexes with `get`, uses checked arithmetic on sizes from files, and reports every
//! failure as a return value. Under `panic = "unwind"` (the workspace's test and release builds, which only
//! need the crate to compile and run its unit tests) the crate links `std`, whose panic runtime takes over.
#![no_std]

#[cfg(not(panic = "abort"))]
extern crate std;

mod copies;
mod deferred;
mod diag;
mod dump;
mod fd_reserve;
mod handlers;
mod in_flight;
mod lock;
mod merge;
mod own_libc;
mod path;
mod raw_fork;
mod reentry;
mod region;
mod sandbox;
mod signals;
mod sys;
mod table;
mod threads;
mod timer;
mod trace;
mod trace_ring;

use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use diag::{pp_info, pp_warn, Dec};
use dump::Kind;
use pathprof_format::layout::{
    ModuleDesc, PathTable, SparseRegion, DESC_FLAG_ATOMIC, DESC_FLAG_REGISTERED, DESC_VERSION,
};

#[cfg(panic = "abort")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // Unreachable by construction (see "Build" above); if it is ever reached, a bug in pathprof, not in the
    // program, stops the process here instead of unwinding into C frames.
    // SAFETY: abort has no preconditions.
    unsafe { libc::abort() }
}

/// Head of the registered-module list (newest first), linked through `ModuleDesc::next`.
static HEAD: AtomicPtr<ModuleDesc> = AtomicPtr::new(ptr::null_mut());
/// Set by the first registration, which installs the exit and fork handlers.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Registers an instrumented module; called from the module's constructor.
///
/// Descriptors of another `DESC_VERSION` or with inconsistent fields are ignored with one warning line.
///
/// # Safety
/// `desc` must be null or point to a descriptor that stays valid (and whose counters and metadata stay valid)
/// until it is unregistered or the process exits, and must not be registered again while registered. Only the
/// runtime writes `desc->next` after this call.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_register_module(desc: *mut ModuleDesc) {
    if desc.is_null() {
        return;
    }
    // SAFETY: the caller passes a valid descriptor; nothing else writes these fields.
    let d = unsafe { &*desc };
    if d.version != DESC_VERSION {
        pp_warn!(
            "ignoring an instrumented module built for descriptor version ",
            Dec(d.version as u64),
            " (this runtime reads version ",
            Dec(DESC_VERSION as u64),
            "); rebuild it with this pathprof"
        );
        return;
    }
    let counters_ok = (d.num_counters == 0 || !d.counters.is_null())
        && d.counters.is_aligned()
        && d.num_counters.checked_mul(8).is_some_and(|b| b <= isize::MAX as u64);
    let meta_ok = (d.meta_len == 0 || !d.meta.is_null()) && d.meta_len <= isize::MAX as u64;
    let tables_ok = (d.num_tables == 0 || !d.tables.is_null())
        && d.tables.is_aligned()
        && d.num_tables.checked_mul(core::mem::size_of::<PathTable>() as u64).is_some_and(|b| b <= isize::MAX as u64)
        && (0..d.num_tables as usize).all(|i| {
            // SAFETY: `tables` holds `num_tables` entries (checked just above).
            let t = unsafe { &*d.tables.add(i) };
            t.cache_len == 0
                || (t.cache_len.is_power_of_two()
                    && !t.cache.is_null()
                    && t.cache.is_aligned()
                    && t.cache_len.checked_mul(16).is_some_and(|b| b <= isize::MAX as u64))
        });
    let regions_ok = (d.num_regions == 0 || !d.regions.is_null())
        && d.regions.is_aligned()
        && d.num_regions
            .checked_mul(core::mem::size_of::<SparseRegion>() as u64)
            .is_some_and(|b| b <= isize::MAX as u64)
        && (0..d.num_regions as usize).all(|i| {
            // SAFETY: `regions` holds `num_regions` entries (checked just above).
            let r = unsafe { &*d.regions.add(i) };
            !r.cell.is_null() && r.cell.is_aligned() && r.len.checked_mul(8).is_some_and(|b| b <= isize::MAX as u64)
        });
    if !counters_ok || !meta_ok || !tables_ok || !regions_ok {
        pp_warn!("ignoring an instrumented module with a malformed descriptor (counters, tables, regions or metadata)");
        return;
    }
    // A constructor run again (a call of a function the optimiser emptied runs on into whatever follows it)
    // must not link the list into a cycle: the flag tells in O(1), where a list scan per registration would be
    // quadratic in the number of translation units at start-up.
    if flags_of(desc).fetch_or(DESC_FLAG_REGISTERED, Ordering::AcqRel) & DESC_FLAG_REGISTERED != 0 {
        pp_info!("module registered twice; ignoring the second registration");
        return;
    }
    region::map_all(desc);
    let mut head = HEAD.load(Ordering::Acquire);
    loop {
        // SAFETY: `desc` is not in the list yet, so we are the only writer of its link.
        unsafe { next_of(desc).store(head, Ordering::Relaxed) };
        match HEAD.compare_exchange_weak(head, desc, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(now) => head = now,
        }
    }
    if !INSTALLED.swap(true, Ordering::AcqRel) {
        sys::note_owner();
        path::note_start_dir();
        // SAFETY: plain C registrations of `extern "C"` functions defined in this crate. Both come from
        // libc_nonshared.a and record this image's `__dso_handle`, so a `dlclose` of a shared object that
        // carries its own runtime copy runs (and then forgets) that copy's handlers.
        unsafe {
            if libc::atexit(exit_handler) != 0 {
                pp_warn!("cannot install the exit handler; call __pathprof_dump() to write the profile");
            }
            // `quick_exit` runs these instead, in reverse order too: after the program's own.
            sys::at_quick_exit(exit_handler);
            libc::pthread_atfork(None, None, Some(fork_child_handler));
        }
        threads::init();
        raw_fork::init();
        lock().state().reserve.hold(2);
        let signals = sys::env(c"PATHPROF_SIGNALS").is_some_and(|v| v != b"0");
        let interval = sys::env(c"PATHPROF_DUMP_INTERVAL");
        if signals || interval.is_some() {
            // Handlers and the timer thread run this image's code at any time: never let dlclose unmap it.
            pin_image();
        }
        if signals {
            signals::install();
        }
        if let Some(v) = interval {
            timer::start(v);
        }
    }
}

// The runtime's reference to `dlopen` is weak: a static program that does not use `dlopen` itself links
// without it — and without glibc's link-time warning that a static `dlopen` needs the shared libraries at run
// time, which every static link of an instrumented program printed. A static program is one image, never
// unloaded: nothing to pin.
core::arch::global_asm!(".weak dlopen");

/// Keeps this image mapped for the life of the process (`RTLD_NODELETE`); a no-op for the main executable and in
/// a static program.
fn pin_image() {
    let dlopen: unsafe extern "C" fn(*const core::ffi::c_char, core::ffi::c_int) -> *mut core::ffi::c_void =
        libc::dlopen;
    // A weak symbol left undefined has address 0, which the compiler would assume no function has.
    if core::hint::black_box(dlopen as usize) == 0 {
        return;
    }
    // SAFETY: dladdr on an address inside this image, dlopen of the name it reports with RTLD_NOLOAD (it is
    // loaded: we are running its code); the handle is deliberately never closed.
    unsafe {
        let mut info: libc::Dl_info = core::mem::zeroed();
        if libc::dladdr(pin_image as fn() as *const core::ffi::c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
        }
    }
}

/// Merges one module's counts into the profile and removes it from the list; for a module destructor written
/// by hand (for example one that runs at `dlclose`: the pass emits none). Frees the module's path-table arrays.
///
/// # Safety
/// `desc` must be null or a descriptor previously passed to [`__pathprof_register_module`] (other pointers
/// are ignored).
#[no_mangle]
pub unsafe extern "C" fn __pathprof_unregister_module(desc: *mut ModuleDesc) {
    if sandbox::confined() {
        return; // no system call in a sandbox (see `sandbox`)
    }
    let mut guard = lock();
    if desc.is_null() || !modules().any(|m| m == desc) {
        return;
    }
    // At exit the module destructors run after the exit dump, and after the program's own destructors (theirs
    // have the default priority, the pass's run last), whose counts the exit dump could not see: this dump
    // merges them (a dump with nothing new writes nothing). If the exit dump failed, its warning was printed
    // and retrying here would print another.
    if !guard.state().exit_failed {
        let kind = if guard.state().exiting { Kind::End } else { Kind::Normal };
        let _ = dump::dump(guard.state(), dump::Scope::One(desc), kind);
    }
    unlink(desc);
    table::release(desc);
    if !guard.state().exiting {
        // An image going away (`dlclose`): its regions go with it, or each load of it would leak them. At exit
        // they stay: a thread still running the module's code must not fault.
        region::unmap_all(desc);
    }
    reentry::forget(&mut guard.state().reentries, desc);
}

/// Merges the counts accumulated since the last dump or reset into the profile file, then zeroes them.
/// Returns 0 on success, -1 on failure (after one warning line on stderr). See `include/pathprof.h`.
#[no_mangle]
pub extern "C" fn __pathprof_dump() -> i32 {
    if sandbox::confined() {
        return -1; // no system call in a sandbox (see `sandbox`)
    }
    let mut guard = lock();
    match dump::dump(guard.state(), dump::Scope::All, Kind::Normal) {
        Ok(()) => 0,
        Err(()) => -1,
    }
}

/// Zeroes every counter and path-table count of every registered module (without writing anything).
#[no_mangle]
pub extern "C" fn __pathprof_reset() {
    let mut guard = lock();
    for m in modules() {
        for c in counters(m) {
            c.store(0, Ordering::Relaxed);
        }
        table::reset(m);
        reentry::forget(&mut guard.state().reentries, m);
    }
}

/// Called by instrumented code right before every call of a function that ends the process image without
/// running `atexit` handlers: `exec*` and `daemon` (`how` = [`symbols::IMAGE_END_EXEC`]: `exec` may fail and
/// return, `daemon`'s parent `_exit`s in the C library and its child returns) and `_exit`, `_Exit`
/// ([`symbols::IMAGE_END_EXIT`]). (`quick_exit` runs the `at_quick_exit` handler installed at the first
/// registration, after the program's own handlers, which may run instrumented code.) Without it a `fork()`ed
/// child that `exec`s or `_exit`s, or a program that `exec`s, would silently lose everything counted since the
/// last dump — the child's side of every `if (fork() == 0)`. The pass puts the call after all its own code
/// before the call (arrivals of the activations in flight, promoted counters), so this is the dump `exit` would
/// make. If `exec` fails the process goes on: the dump drained what it wrote, so nothing counts twice.
///
/// Never writes from a `vfork` child (it shares its parent's counters, which the parent writes), nor from a
/// signal handler that interrupted this thread's own dump. Allocates with `mmap` (the call may be in a
/// signal handler: `_exit` and `execve` are async-signal-safe). Keeps `errno`. Every other runtime copy of the
/// process (instrumented shared objects with their own) writes its modules too (`copies`).
///
/// [`symbols::IMAGE_END_EXEC`]: pathprof_format::symbols::IMAGE_END_EXEC
/// [`symbols::IMAGE_END_EXIT`]: pathprof_format::symbols::IMAGE_END_EXIT
#[no_mangle]
pub extern "C" fn __pathprof_image_end(how: u32) {
    if sys::shares_parent_memory() || sandbox::confined() {
        return;
    }
    // SAFETY: the calling thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    image_end_of_this_copy(how);
    copies::for_each_other(how);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// [`__pathprof_image_end`]'s work for this runtime copy's modules and trace; what other copies call through
/// the ELF note `copies` defines.
pub(crate) extern "C" fn image_end_of_this_copy(how: u32) {
    if sys::shares_parent_memory() || sandbox::confined() {
        return;
    }
    // SAFETY: the calling thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    if how == pathprof_format::symbols::IMAGE_END_EXEC {
        trace::exec_flush();
    } else {
        trace::image_end();
    }
    if !HEAD.load(Ordering::Acquire).is_null() && LOCK.load(Ordering::Relaxed) != owner_id() {
        in_flight::wait_for_others_to_park();
        let mut guard = lock();
        let st = guard.state();
        if !st.exiting {
            st.exiting = how != pathprof_format::symbols::IMAGE_END_EXEC;
            let _ctx = sys::SignalContext::enter();
            let _ = dump::dump(st, dump::Scope::All, Kind::End);
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

extern "C" fn exit_handler() {
    if sandbox::confined() {
        return; // no system call in a sandbox (see `sandbox`)
    }
    if !HEAD.load(Ordering::Acquire).is_null() {
        in_flight::wait_for_others_to_park();
    }
    let mut guard = lock();
    guard.state().exiting = true;
    let failed = dump::dump(guard.state(), dump::Scope::All, Kind::End).is_err();
    guard.state().exit_failed = failed;
}

/// One `PATHPROF_DUMP_INTERVAL` tick (on the timer thread); false once the process is exiting.
fn timer_tick() -> bool {
    if sandbox::confined() {
        return false;
    }
    let mut guard = lock();
    if guard.state().exiting {
        return false;
    }
    let _ = dump::dump(guard.state(), dump::Scope::All, Kind::Timer);
    true
}

/// The flush of a fatal-signal handler (see `signals`): a dump of every module with every record flagged
/// incomplete, without `malloc`. Gives up (one warning line) if another thread's dump holds the runtime lock
/// for more than 2 s.
fn signal_flush(sig: core::ffi::c_int) {
    if sandbox::confined() {
        return;
    }
    trace::signal_flush(sig);
    if HEAD.load(Ordering::Acquire).is_null() {
        return; // no profile-mode module (a trace-mode program): no profile to write
    }
    let me = owner_id();
    if LOCK.load(Ordering::Relaxed) == me {
        // Unreachable: lock holders block the fatal signals. Waiting here would deadlock.
        return;
    }
    let deadline = signals::now_ns().saturating_add(2_000_000_000);
    FLUSH_WAITING.store(true, Ordering::Release);
    while LOCK.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed).is_err() {
        if signals::now_ns() > deadline {
            FLUSH_WAITING.store(false, Ordering::Release);
            pp_warn!("fatal signal ", Dec(sig as u64), " during a dump in another thread; no profile written");
            return;
        }
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
    }
    FLUSH_WAITING.store(false, Ordering::Release);
    let guard = Guard { mask: None };
    {
        let _ctx = sys::SignalContext::enter();
        // SAFETY: we hold the lock.
        let st = unsafe { &mut *STATE.0.get() };
        let _ = dump::dump(st, dump::Scope::All, Kind::Fatal(sig));
    }
    drop(guard);
}

/// Right before the program confines itself in a seccomp sandbox (see `sandbox`): everything counted so far,
/// apart and flagged incomplete, with the process's last write.
pub(crate) fn dump_before_confinement() {
    if HEAD.load(Ordering::Acquire).is_null() {
        return;
    }
    let mut guard = lock();
    let _ = dump::dump(guard.state(), dump::Scope::All, Kind::Confinement);
}

/// In a `_Fork` child (`raw_fork`): what the fork handler does, if this copy has installed it.
pub(crate) fn fork_child_of_raw_fork() {
    if INSTALLED.load(Ordering::Acquire) {
        // SAFETY: the child of a fork, single-threaded, before `_Fork` returns there.
        unsafe { fork_child_handler() };
    }
}

/// Runs in a `fork()`ed child, single-threaded, before `fork` returns there.
unsafe extern "C" fn fork_child_handler() {
    // A thread of the parent may have held the lock or been resizing the run set: both are reset, and the
    // set's buffer is abandoned rather than freed.
    // SAFETY: the child has exactly one thread, so nothing else accesses the state now.
    let st = unsafe { &mut *STATE.0.get() };
    st.counted.leak();
    st.counted_pid = 0;
    st.exit_failed = false;
    st.timer_warned = false;
    st.reentries_lost = false;
    st.apart = false;
    st.threads_ran = false;
    sys::note_owner();
    handlers::fork_child();
    // Before `fork` returns here: every activation on this stack compares the generation after its call.
    reentry::fork_child(&mut st.reentries);
    LOCK.store(0, Ordering::Release);
    threads::fork_child();
    in_flight::fork_child();
    signals::fork_child();
    // The parent reports everything counted before the fork.
    for m in modules() {
        for c in counters(m) {
            c.store(0, Ordering::Relaxed);
        }
        table::fork_child(m);
    }
}

/// The `next` link of a descriptor, accessed atomically (unlink stores into it while dumps read it).
///
/// # Safety
/// `d` must point to a live descriptor.
unsafe fn next_of<'a>(d: *mut ModuleDesc) -> &'a AtomicPtr<ModuleDesc> {
    // SAFETY: the field is a properly aligned pointer-sized slot; all accesses after registration go through
    // this atomic view.
    unsafe { AtomicPtr::from_ptr(ptr::addr_of_mut!((*d).next)) }
}

/// The registered modules, newest first. Safe to run concurrently with registrations (which only change the
/// head); unlinking happens only under the lock.
fn modules() -> impl Iterator<Item = *mut ModuleDesc> {
    let mut cur = HEAD.load(Ordering::Acquire);
    core::iter::from_fn(move || {
        if cur.is_null() {
            return None;
        }
        let d = cur;
        // SAFETY: registered descriptors stay valid while linked.
        cur = unsafe { next_of(d) }.load(Ordering::Acquire);
        Some(d)
    })
}

/// A module's counters as atomics (plain loads and stores compile to ordinary moves).
fn counters<'a>(d: *mut ModuleDesc) -> impl Iterator<Item = &'a AtomicU64> {
    // SAFETY: registration checked that `counters` is non-null and aligned when `num_counters > 0`.
    let (base, n) = unsafe { ((*d).counters, (*d).num_counters as usize) };
    // SAFETY: each counter is an aligned u64 of the module, valid while the module is registered; concurrent
    // access by instrumented code is the reason for the atomic view.
    (0..n).map(move |i| unsafe { AtomicU64::from_ptr(base.add(i)) })
}

/// Whether the module asked for atomic counter updates.
pub(crate) fn is_atomic(d: *mut ModuleDesc) -> bool {
    flags_of(d).load(Ordering::Relaxed) & DESC_FLAG_ATOMIC != 0
}

/// The descriptor's flags, accessed atomically (the runtime owns [`DESC_FLAG_REGISTERED`] and sets it while
/// other threads may read the others).
fn flags_of<'a>(d: *mut ModuleDesc) -> &'a AtomicU32 {
    // SAFETY: `d` is a live descriptor; its flags are an aligned u32 that, after emission, only the runtime
    // writes, always through this atomic view.
    unsafe { AtomicU32::from_ptr(ptr::addr_of_mut!((*d).flags)) }
}

/// Removes `desc` from the list; call with the lock held.
fn unlink(desc: *mut ModuleDesc) {
    unlink_from_list(desc);
    flags_of(desc).fetch_and(!DESC_FLAG_REGISTERED, Ordering::AcqRel);
}

/// [`unlink`]'s list part: `desc` out of the chain, its flags left to the caller.
fn unlink_from_list(desc: *mut ModuleDesc) {
    // SAFETY: `desc` is linked and valid; only lock holders unlink, so the only concurrent change is a
    // registration replacing the head.
    let after = unsafe { next_of(desc) }.load(Ordering::Acquire);
    if HEAD.compare_exchange(desc, after, Ordering::AcqRel, Ordering::Acquire).is_ok() {
        return;
    }
    let mut prev = HEAD.load(Ordering::Acquire);
    while !prev.is_null() {
        // SAFETY: linked descriptors are valid.
        let link = unsafe { next_of(prev) };
        let next = link.load(Ordering::Acquire);
        if next == desc {
            link.store(after, Ordering::Release);
            return;
        }
        prev = next;
    }
}

/// Runtime state shared by dumps; only accessed with [`LOCK`] held (or in the single-threaded fork child).
pub(crate) struct State {
    /// Sorted `meta_hash`es whose `runs` this process has already incremented.
    pub(crate) counted: sys::MVec<u64>,
    /// The process `counted` belongs to.
    pub(crate) counted_pid: u32,
    /// The `%m` signature, fixed at its first use so every dump of the process names the same file.
    pub(crate) signature: Option<u64>,
    /// The exit dump failed (and said so).
    pub(crate) exit_failed: bool,
    /// The exit dump has started: interval-timer ticks do nothing from now on.
    pub(crate) exiting: bool,
    /// A timer tick failed and said so; later failing ticks stay quiet.
    pub(crate) timer_warned: bool,
    /// Fork re-entries recorded in this process and not yet written (see `reentry`).
    pub(crate) reentries: sys::MVec<reentry::Reentry>,
    /// A re-entry could not be recorded (out of memory): the next successful dump flags its records incomplete.
    pub(crate) reentries_lost: bool,
    /// A signal handler of this process did not return, or its end ran under another thread: its dumps go to
    /// `FILE.<pid>.incomplete` (see `dump`).
    pub(crate) apart: bool,
    /// Dumps at this process's end kept finding another thread running around their drain: what it writes from
    /// then on is flagged `RECORD_FLAG_THREADS_IN_FLIGHT` (see `dump`, `in_flight`).
    pub(crate) threads_ran: bool,
    /// Descriptors held for the dump (see `fd_reserve`).
    pub(crate) reserve: fd_reserve::Reserve,
}

struct Global<T>(core::cell::UnsafeCell<T>);
// SAFETY: the contents are only accessed through `Guard` (mutual exclusion) or in the single-threaded fork child.
unsafe impl<T> Sync for Global<T> {}

static STATE: Global<State> = Global(core::cell::UnsafeCell::new(State {
    counted: sys::MVec::new(),
    counted_pid: 0,
    signature: None,
    exit_failed: false,
    exiting: false,
    timer_warned: false,
    reentries: sys::MVec::new(),
    reentries_lost: false,
    apart: false,
    threads_ran: false,
    reserve: fd_reserve::Reserve::new(),
}));

/// The runtime lock: a spin lock (yielding) rather than a pthread mutex, so a child forked while another thread
/// held it can simply reset it. It holds the owner's [`owner_id`], 0 when free.
static LOCK: AtomicU64 = AtomicU64::new(0);

/// The calling thread's lock owner value (never 0).
fn owner_id() -> u64 {
    // SAFETY: pthread_self has no preconditions (and is async-signal-safe: it reads the thread pointer).
    (unsafe { libc::pthread_self() } as u64) | 1
}

/// Holds the runtime lock; with the fatal-signal handlers installed, also keeps them blocked in this thread
/// (the previous mask is restored on drop), so a flush never waits for a dump it interrupted.
struct Guard {
    mask: Option<libc::sigset_t>,
}

fn lock() -> Guard {
    let mask = signals::block();
    let me = owner_id();
    // A fatal-signal flush that waits for the lock goes first: a thread dumping in a loop would otherwise take
    // the lock again before the flush's next attempt, for as long as the flush is willing to wait.
    while FLUSH_WAITING.load(Ordering::Acquire)
        || LOCK.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed).is_err()
    {
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
    }
    Guard { mask }
}

/// Set while a fatal-signal flush waits for the runtime lock; [`lock`] lets it go first.
static FLUSH_WAITING: AtomicBool = AtomicBool::new(false);

impl Guard {
    fn state(&mut self) -> &mut State {
        // SAFETY: holding the guard gives exclusive access; the borrow is tied to the guard.
        unsafe { &mut *STATE.0.get() }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        LOCK.store(0, Ordering::Release);
        if let Some(m) = &self.mask {
            signals::unblock(m);
        }
    }
}
