//! The opt-in profile flush on fatal signals (`PATHPROF_SIGNALS=1`, read at the first registration).
//!
//! # What is installed
//! Handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT (so `abort()` and `std::terminate`) and SIGTERM, with
//! `SA_SIGINFO | SA_ONSTACK` (a stack overflow is flushed only if the crashing thread has an alternate signal
//! stack) and all six signals blocked while a handler runs. A signal that was ignored (`SIG_IGN`) when the
//! runtime registered is left alone. Handlers the program installs later replace ours (then nothing is
//! flushed for that signal); a handler that was installed earlier is called after the flush (chaining).
//!
//! # What a handler does
//! 1. Only the process that installed the handlers (or a `fork()`ed child, which re-arms them) flushes: a
//!    `vfork()` child shares the parent's memory and must not drain the parent's counters.
//! 2. One flush at a time per process (an atomic state word): a second thread that takes a fatal signal while
//!    the first one flushes waits for it (at most 5 s), then goes on to step 4 without flushing again.
//! 3. The flush takes the runtime lock (waiting at most 2 s for a dump in another thread, which cannot be
//!    interrupted by these signals: every holder of the runtime lock blocks them while it holds it, so a flush
//!    never waits for a dump of its own thread and never deadlocks) and merges the counts into the profile
//!    like a normal dump, with every record this process writes flagged
//!    [`RECORD_FLAG_INCOMPLETE`](pathprof_format::layout::RECORD_FLAG_INCOMPLETE): the frames that were in
//!    flight never completed, so the counts are a lower bound. Async-signal-safety: no `malloc`/`free` (memory
//!    comes from `mmap`, see [`crate::sys`]), no stdio, no `strerror`; only `open`, `pread`, `write`, `fsync`,
//!    `rename`, `unlink`, `flock`, `mmap`/`munmap`, `getrusage` and similar system calls. The file lock is taken
//!    with `LOCK_NB`: if another process holds it, the flush does not wait but writes this process's counts
//!    alone to `FILE.<pid>.incomplete` (one warning line names it; `pathprof merge` can add it to `FILE`).
//! 4. Chaining: if a handler was installed before ours, it is called (with the same arguments); otherwise the
//!    default action is restored and the signal raised again, so it is delivered when our handler returns and
//!    the program ends exactly as it would have without pathprof (same signal, same core dump).
//!
//! Without the opt-in nothing is installed: a program killed by a signal writes no profile. `_exit()` and
//! `quick_exit()` never write a profile (they run no `atexit` handlers), with or without it.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The signals handled.
pub(crate) const SIGNALS: [c_int; 6] =
    [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGABRT, libc::SIGTERM];

/// The handlers are installed (for at least one signal).
static ENABLED: AtomicBool = AtomicBool::new(false);
/// The process that installed them (updated in a `fork()`ed child).
static OWNER_PID: AtomicU32 = AtomicU32::new(0);
/// 0: no flush running; 1: a thread is flushing.
static FLUSHING: AtomicU32 = AtomicU32::new(0);

/// The dispositions found at installation, per entry of [`SIGNALS`] (written once, before our handler is set).
struct Prev(core::cell::UnsafeCell<[Option<libc::sigaction>; 6]>);
// SAFETY: written only by `install` (once, before the corresponding handler exists), read only afterwards.
unsafe impl Sync for Prev {}
static PREV: Prev = Prev(core::cell::UnsafeCell::new([None; 6]));

/// Whether `install` ran (the profile and the trace runtime may both ask).
static INSTALL_RAN: AtomicBool = AtomicBool::new(false);

/// Installs the handlers (at the first registration of a profile-mode or trace-mode module, when
/// `PATHPROF_SIGNALS=1`); only the first call does anything.
pub(crate) fn install() {
    if INSTALL_RAN.swap(true, Ordering::AcqRel) {
        return;
    }
    OWNER_PID.store(crate::sys::pid(), Ordering::Relaxed);
    let mut any = false;
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: all-zero sigaction is valid; sigaction with a null new action only reads the current one.
        let mut old: libc::sigaction = unsafe { core::mem::zeroed() };
        if unsafe { libc::sigaction(sig, core::ptr::null(), &mut old) } != 0 || old.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: see `Prev`; entry `i` is written before the handler that reads it is installed.
        if let Some(slot) = unsafe { (*PREV.0.get()).get_mut(i) } {
            *slot = Some(old);
        }
        // SAFETY: all-zero sigaction is valid; the fields are filled below.
        let mut sa: libc::sigaction = unsafe { core::mem::zeroed() };
        sa.sa_sigaction = on_fatal as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        fatal_set(&mut sa.sa_mask);
        // SAFETY: a valid action for a catchable signal.
        if unsafe { libc::sigaction(sig, &sa, core::ptr::null_mut()) } == 0 {
            any = true;
        }
    }
    if any {
        ENABLED.store(true, Ordering::Release);
    }
}

/// Whether the handlers are installed.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// Fills `set` with the six handled signals.
fn fatal_set(set: &mut libc::sigset_t) {
    // SAFETY: `set` is a valid sigset_t.
    unsafe {
        libc::sigemptyset(set);
        for &s in &SIGNALS {
            libc::sigaddset(set, s);
        }
    }
}

/// Blocks the handled signals in the calling thread if the handlers are installed; returns the previous mask
/// for [`unblock`]. Every holder of the runtime lock does this, so a flush never interrupts a dump of its own
/// thread. (A synchronous fault while they are blocked makes the kernel kill the process with the default
/// action: the exit status is unchanged, only the flush is lost.)
pub(crate) fn block() -> Option<libc::sigset_t> {
    if !enabled() {
        return None;
    }
    // SAFETY: valid sigset_t values.
    let mut set: libc::sigset_t = unsafe { core::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { core::mem::zeroed() };
    fatal_set(&mut set);
    // SAFETY: valid pointers.
    if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) } != 0 {
        return None;
    }
    Some(old)
}

/// Restores a mask returned by [`block`].
pub(crate) fn unblock(old: &libc::sigset_t) {
    // SAFETY: a mask previously returned by pthread_sigmask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, core::ptr::null_mut()) };
}

/// In a `fork()`ed child: the handlers are inherited; the child flushes its own counts.
pub(crate) fn fork_child() {
    OWNER_PID.store(crate::sys::pid(), Ordering::Relaxed);
    FLUSHING.store(0, Ordering::Relaxed);
}

/// Nanoseconds on the monotonic clock (async-signal-safe).
pub(crate) fn now_ns() -> u64 {
    // SAFETY: valid out-pointer; CLOCK_MONOTONIC always exists.
    let mut ts: libc::timespec = unsafe { core::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

extern "C" fn on_fatal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: the thread's errno slot; restored before returning to the interrupted code.
    let errno = unsafe { *libc::__errno_location() };
    if crate::sys::pid() == OWNER_PID.load(Ordering::Relaxed) {
        if FLUSHING.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            crate::signal_flush(sig);
            FLUSHING.store(0, Ordering::Release);
        } else {
            // Another thread is flushing: let it finish before this signal ends the process.
            let deadline = now_ns().saturating_add(5_000_000_000);
            while FLUSHING.load(Ordering::Acquire) != 0 && now_ns() < deadline {
                // SAFETY: no preconditions.
                unsafe { libc::sched_yield() };
            }
        }
    }
    chain(sig, info, ctx);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Passes the signal on: to the handler installed before ours, or to the default action.
fn chain(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let Some(i) = SIGNALS.iter().position(|&s| s == sig) else { return };
    // SAFETY: see `Prev`: entries are never written after our handler exists.
    let prev = unsafe { (*PREV.0.get()).get(i).copied().flatten() };
    let Some(prev) = prev else { return };
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL {
        // SAFETY: all-zero sigaction with SIG_DFL (0) is the default disposition.
        let dfl: libc::sigaction = unsafe { core::mem::zeroed() };
        // SAFETY: valid action. The raised signal stays pending (it is blocked while this handler runs) and is
        // delivered, with its default action, as soon as the handler returns. For a fault, returning would
        // also re-execute the faulting instruction; the pending signal comes first.
        unsafe {
            libc::sigaction(sig, &dfl, core::ptr::null_mut());
            libc::raise(sig);
        }
    } else if h != libc::SIG_IGN {
        if prev.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the program installed this address as an `sa_sigaction` handler.
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = unsafe { core::mem::transmute(h) };
            f(sig, info, ctx);
        } else {
            // SAFETY: the program installed this address as an `sa_handler` handler.
            let f: extern "C" fn(c_int) = unsafe { core::mem::transmute(h) };
            f(sig);
        }
    }
}
