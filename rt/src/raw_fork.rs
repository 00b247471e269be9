//! `_Fork` for instrumented code: the pass sends the module's calls of `_Fork` (glibc 2.34: a `fork` that runs
//! no `pthread_atfork` handlers, async-signal-safe) here ([`symbols::FORK_RAW`]).
//!
//! The runtime's fork handlers are what keep a child's counts exact: the child zeroes the counters it inherited
//! (its parent reports them) and moves the fork generation on, so that each activation in flight at the fork
//! records a re-entry; trace mode drops the parent's other threads. A `_Fork` child ran none of it and, at its
//! exit, wrote its parent's counts a second time — `main` read 2 entries for one, exact. This wrapper calls
//! `_Fork` and runs this runtime copy's handlers itself, in the parent and in the child.
//!
//! `_Fork` is looked up at the first registration (`dlsym` is not async-signal-safe, `_Fork` is). Not covered:
//! other runtime copies of the process (an instrumented shared object with its own) run no handler, and raw
//! `fork`/`clone` system calls are not seen at all.
//!
//! [`symbols::FORK_RAW`]: pathprof_format::symbols::FORK_RAW

use core::sync::atomic::{AtomicUsize, Ordering};

/// The C library's `_Fork`, or 0 (not resolved yet, or a C library without it).
static FORK: AtomicUsize = AtomicUsize::new(0);

/// Looks `_Fork` up (at the first registration of either runtime).
pub(crate) fn init() {
    if FORK.load(Ordering::Acquire) != 0 {
        return;
    }
    // SAFETY: dlsym with a valid NUL-terminated name; null means the C library has no `_Fork`.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_Fork".as_ptr()) };
    FORK.store(f as usize, Ordering::Release);
}

/// `_Fork()` with this runtime copy's fork handlers run around it.
#[no_mangle]
pub extern "C" fn __pathprof__Fork() -> libc::pid_t {
    let mut f = FORK.load(Ordering::Acquire);
    if f == 0 {
        // No module of this copy has registered yet (a constructor of another image forks): look it up now.
        init();
        f = FORK.load(Ordering::Acquire);
    }
    if f == 0 {
        // SAFETY: the calling thread's errno slot. (Only code that calls `_Fork` gets here, so the C library it
        // linked against has one; this is for a library that lost it since.)
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    }
    // SAFETY: `f` is the C library's `_Fork`, which takes no arguments and returns a pid.
    let fork: unsafe extern "C" fn() -> libc::pid_t = unsafe { core::mem::transmute(f) };
    let pid = crate::trace::around_raw_fork(fork);
    if pid == 0 {
        crate::fork_child_of_raw_fork();
    }
    pid
}
