//! `_Fork` for instrumented code: the pass sends the module's calls of `_Fork` (glibc 2.34: a `fork` that runs
//! no `pthread_atfork` handlers, async-signal-safe) here ([`symbols::FORK_RAW`]).
//!
//! The runtime's fork handlers are what keep a child's counts exact: the child zeroes the counters it inherited
//! (its parent reports them) and moves the fork generation on, so that each activation in flight at the fork
//! records a re-entry; trace mode drops the parent's other threads. A `_Fork` child ran none of it and, at its
//! exit, wrote its parent's counts a second time — `main` read 2 entries for one, exact. This wrapper calls
//! `_Fork` and runs this runtime copy's handlers itself, in the parent and in the child.
//!
//! `_Fork` is looked up at the first registration (`dlsym` is not async-signal-safe, `_Fork` is). The C
//! library's `clone` runs no handler either; [`__pathprof_clone`] does for a child without `CLONE_VM`, and
//! [`__pathprof_syscall`] for the child of a `fork`, `clone` or `clone3` system call made through `syscall(2)`.
//! Not covered: other runtime copies of the process (an instrumented shared object with its own) run no
//! handler, and system calls the program makes without the C library (inline assembly) are not seen at all.
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
    let traced = crate::trace::before_raw_fork();
    // SAFETY: as above.
    let pid = unsafe { fork() };
    if pid == 0 {
        in_the_child(traced);
    } else if traced {
        crate::trace::parent_after_raw_fork();
    }
    pid
}

/// In the child of a fork the C library ran no handlers for: this runtime copy's fork handlers, trace mode's
/// too when `traced` ([`crate::trace::before_raw_fork`] prepared it).
fn in_the_child(traced: bool) {
    if traced {
        crate::trace::child_after_raw_fork();
    }
    crate::fork_child_of_raw_fork();
}

/// What a `clone` child without `CLONE_VM` runs first: the function and argument the program gave `clone`.
#[repr(C)]
struct CloneStart {
    run: unsafe extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
    traced: bool,
}

/// `clone(fn, stack, flags, arg, parent_tid, tls, child_tid)` for instrumented code (the pass redirects the
/// variadic C library function here; on x86-64 a variadic call passes its arguments where this function reads
/// them, and the C library's `clone` reads its last three — two registers and a stack slot — whether they were
/// passed or not, as this one does). A child that shares its parent's memory (`CLONE_VM`: a thread, or `posix_spawn`'s child) is left
/// alone — its counts are the parent's. Any other child is a fork child that the C library runs no fork handler
/// for: it would count on from its parent's counters and, if it called `exit`, write them a second time; it
/// also ends, when its function returns, with the `exit` system call, which writes nothing — what it counted
/// was lost. So the child first runs this runtime's fork handlers, then the function, then writes what `_exit`
/// would have before the C library ends it with the function's result, as before.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_clone(
    run: Option<unsafe extern "C" fn(*mut libc::c_void) -> libc::c_int>,
    stack: *mut libc::c_void,
    flags: libc::c_int,
    arg: *mut libc::c_void,
    parent_tid: *mut libc::pid_t,
    tls: *mut libc::c_void,
    child_tid: *mut libc::pid_t,
) -> libc::c_int {
    let Some(run) = run else {
        // What the C library's `clone` does with a null function.
        // SAFETY: the calling thread's errno slot.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return -1;
    };
    if flags & libc::CLONE_VM != 0 {
        // SAFETY: the program's own call, passed on unchanged (the function pointer only loses its `unsafe`).
        let run: extern "C" fn(*mut libc::c_void) -> libc::c_int = unsafe { core::mem::transmute(run) };
        // SAFETY: as above.
        return unsafe { libc::clone(run, stack, flags, arg, parent_tid, tls, child_tid) };
    }
    let traced = crate::trace::before_raw_fork();
    // Read by the child from its copy of this frame, which the clone copies while it is live.
    let start = CloneStart { run, arg, traced };
    let start_ptr = core::ptr::addr_of!(start) as *mut libc::c_void;
    // SAFETY: the program's arguments, with the child's function and argument replaced by ours.
    let pid = unsafe { libc::clone(clone_child, stack, flags, start_ptr, parent_tid, tls, child_tid) };
    if traced {
        crate::trace::parent_after_raw_fork();
    }
    pid
}

/// A `clone` child's first code (see [`__pathprof_clone`]). It runs on the stack the program gave `clone`,
/// which may be a few hundred bytes more than its function needs: the fork handlers take little, and the write
/// at the end runs on a stack of its own, as every write does (`sys::on_own_stack`).
extern "C" fn clone_child(start: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` points at the parent's `CloneStart`, in this child's copy of its memory.
    let start = unsafe { core::ptr::read(start as *const CloneStart) };
    in_the_child(start.traced);
    // SAFETY: the program's function and argument, as it gave them to `clone`.
    let status = unsafe { (start.run)(start.arg) };
    crate::__pathprof_image_end(pathprof_format::symbols::IMAGE_END_EXIT);
    status
}

/// `syscall(n, …)` for instrumented code (the pass redirects the variadic C library function here; on x86-64
/// a variadic call passes its arguments where this function reads them, and the C library's `syscall` reads
/// six whether they were passed or not, as this one does). A `fork`, or a `clone`/`clone3` without `CLONE_VM`,
/// makes a child with a copy of its parent's counters that the C library runs no fork handler for: it counted
/// on from them and wrote them a second time at its exit (`main` 2 entries for one, exact). Such a call gets
/// this runtime copy's fork handlers, as `_Fork` does; a `seccomp` call that installs a sandbox first writes the
/// counts (`crate::sandbox`); every other system call (a `vfork` or a `CLONE_VM` child, which counts in its
/// parent's memory, included) is passed on unchanged.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_syscall(
    n: libc::c_long,
    a1: libc::c_long,
    a2: libc::c_long,
    a3: libc::c_long,
    a4: libc::c_long,
    a5: libc::c_long,
    a6: libc::c_long,
) -> libc::c_long {
    if n == libc::SYS_seccomp {
        crate::sandbox::before_seccomp_syscall(a1);
    }
    let vm = libc::CLONE_VM as u64;
    let forks = match n {
        libc::SYS_fork => true,
        libc::SYS_clone => (a1 as u64) & vm == 0,
        // `struct clone_args` starts with its 64-bit flags; a call too short to hold them fails in the kernel.
        libc::SYS_clone3 => {
            a1 != 0 && a2 >= 8 && {
                // SAFETY: the program's argument, which the kernel reads the same way.
                let flags = unsafe { core::ptr::read_unaligned(a1 as *const u64) };
                flags & vm == 0
            }
        }
        _ => false,
    };
    if !forks {
        // SAFETY: the program's own call, passed on unchanged.
        return unsafe { libc::syscall(n, a1, a2, a3, a4, a5, a6) };
    }
    let traced = crate::trace::before_raw_fork();
    // SAFETY: as above.
    let pid = unsafe { libc::syscall(n, a1, a2, a3, a4, a5, a6) };
    if pid == 0 {
        in_the_child(traced);
    } else if traced {
        crate::trace::parent_after_raw_fork();
    }
    pid
}
