//! Seccomp sandboxes. A program that confines itself — `prctl(PR_SET_SECCOMP)`, `seccomp(2)`, libseccomp's
//! `seccomp_load` (Debian's `file` does, to parse untrusted input) — forbids most of the system calls a profile
//! or trace write makes (`openat`, `flock`, `rename`, `mmap`), and the kernel kills a process that makes one: at
//! exit the instrumented build died of `SIGSYS` where its plain build exited normally. The pass puts a call of
//! [`__pathprof_confine`] before each such call (`syscall(SYS_seccomp)` reaches it through
//! `raw_fork::__pathprof_syscall`). Right before the sandbox closes, the runtime writes what it counted so far,
//! apart (`FILE.<pid>.incomplete`) and flagged incomplete, and ends every thread's trace with `END_CONFINED` —
//! the program goes on, and what it runs from then on cannot be written — and from then on it makes no system
//! call of its own: no write, no mapping (`sys::on_own_stack` stays on the caller's stack). Not covered: path
//! tables that need memory after the sandbox closes, and a sandbox that also confines the interval timer's
//! thread (`SECCOMP_FILTER_FLAG_TSYNC` with `PATHPROF_DUMP_INTERVAL`).

use core::sync::atomic::{AtomicBool, Ordering};

/// Set once the program has asked for a sandbox (inherited by its `fork` children, which inherit the sandbox).
static CONFINED: AtomicBool = AtomicBool::new(false);

/// Whether the process is (or is about to be) in a seccomp sandbox: nothing is written any more.
pub(crate) fn confined() -> bool {
    CONFINED.load(Ordering::Acquire)
}

/// [`__pathprof_confine`]'s `what` for a call of libseccomp's `seccomp_load`, which always loads a filter.
const SECCOMP_LOAD: i64 = -1;
/// `prctl` options and modes (linux/prctl.h, linux/seccomp.h), and `seccomp(2)`'s operations.
const PR_SET_SECCOMP: i64 = 22;
const SECCOMP_MODE_STRICT: i64 = 1;
const SECCOMP_MODE_FILTER: i64 = 2;
const SECCOMP_SET_MODE_STRICT: i64 = 0;
const SECCOMP_SET_MODE_FILTER: i64 = 1;

/// Called by instrumented code right before a call that may confine the process: `prctl(what, mode, …)`, or
/// `seccomp_load` (`what` = -1). Writes the counts so far if the call installs a sandbox.
#[no_mangle]
pub extern "C" fn __pathprof_confine(what: i64, mode: i64) {
    let confines =
        what == SECCOMP_LOAD || (what == PR_SET_SECCOMP && matches!(mode, SECCOMP_MODE_STRICT | SECCOMP_MODE_FILTER));
    if confines {
        confine();
    }
}

/// For `syscall(SYS_seccomp, operation, …)`.
pub(crate) fn before_seccomp_syscall(operation: i64) {
    if matches!(operation, SECCOMP_SET_MODE_STRICT | SECCOMP_SET_MODE_FILTER) {
        confine();
    }
}

/// Keeps `errno`: the program's call comes next, and its own `errno` is what the program reads after it.
fn confine() {
    if confined() {
        return;
    }
    // SAFETY: the calling thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    crate::trace::confinement_flush();
    crate::dump_before_confinement();
    CONFINED.store(true, Ordering::Release);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}
