//! Whether another thread may have had an activation in the middle of a block when the process ended.
//!
//! Counts are derived by flow conservation, which holds for an activation that has returned or that waits in
//! a call the pass gave a termination edge (any call not known to return: a blocking system call, a condition
//! wait, `exit` itself). `exit`, `_exit` and `exec` end every thread where it stands: a thread that is
//! *running* then — a detached worker in a loop, a thread pool tearing down — leaves an activation inside a
//! block, where no counter accounts for it, and edge and block mode would derive counts as if it had returned
//! (QuickJS's workers: a function entered once read 0 entries, exact). Which activation that was is not known,
//! so the dump at the process's end flags its records
//! [`RECORD_FLAG_THREADS_IN_FLIGHT`](pathprof_format::layout::RECORD_FLAG_THREADS_IN_FLIGHT) (written apart,
//! like a signal handler's escape).
//!
//! A thread counts as *parked* when the kernel has it asleep before the counters are drained and again after,
//! without a context switch in between (`voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` unchanged):
//! it stayed inside a system call the whole time. Asleep: `S` in `/proc/self/task/TID/status`, or `D` when
//! `/proc/self/task/TID/syscall` names a system call (disk I/O, `vfork`'s wait) rather than a page fault. A
//! thread that has ended but is still listed (`Z`: the main thread after `pthread_exit`, while the others run
//! on) or is exiting (`PF_EXITING` in `/proc/self/task/TID/stat`: a thread just joined, which the kernel lists
//! for a moment more) has no activation left and does not count either. Everything else — running or runnable,
//! a page fault, stopped, a thread that appeared or ended in between, an unreadable status — counts as running.
//! A thread sleeping in a call known to return (under `--pathprof-lto`, `malloc` waiting for its arena lock) or
//! in inline assembly is taken as parked: not covered. The runtime's own timer thread runs no instrumented code
//! and is left out; so is the calling thread, whose activations wait in the call that ends the process. A
//! process that has never had another thread (see [`crate::threads`]) needs no census; one that has and cannot
//! list its threads (no `/proc`) is flagged.
//!
//! Async-signal-safe (system calls and stack buffers; [`MVec`] maps memory in a signal context).

use crate::sys::{self, MVec};
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, Ordering};

/// The timer thread's id (0: none), set by the thread itself.
static TIMER_TID: AtomicU32 = AtomicU32::new(0);

/// Called on the timer thread: it runs only the runtime's dumps, never an instrumented activation.
pub(crate) fn note_timer_thread() {
    TIMER_TID.store(sys::tid(), Ordering::Relaxed);
}

/// In a `fork()`ed child: it has no timer thread (threads do not survive `fork`).
pub(crate) fn fork_child() {
    TIMER_TID.store(0, Ordering::Relaxed);
}

/// What the other threads were doing when the census was taken.
pub(crate) struct Census {
    /// The process has never had another thread ([`crate::threads`]): nothing to look at, and nothing read from
    /// `/proc`, which a chroot or sandbox may not have mounted.
    alone: bool,
    /// Parked threads and their context-switch totals.
    parked: MVec<(u32, u64)>,
    /// Threads past their last user-space instruction for good (the kernel's `PF_EXITING`: a thread just
    /// joined that the kernel has not released yet, or gone): they may vanish before the second look.
    exiting: MVec<u32>,
    /// A thread was running (or the census could not tell).
    running: bool,
}

impl Census {
    /// Looks at every other thread of the process.
    pub(crate) fn take() -> Census {
        let alone = !crate::threads::probe();
        let mut census = Census { alone, parked: MVec::new(), exiting: MVec::new(), running: false };
        if census.alone {
            return census;
        }
        let Some(tids) = other_threads() else {
            census.running = true;
            return census;
        };
        for &tid in tids.as_slice() {
            let noted = match status(tid) {
                Some(Status { asleep: true, switches, .. }) => census.parked.push((tid, switches)).is_ok(),
                _ => exiting(tid) && census.exiting.push(tid).is_ok(),
            };
            if !noted {
                census.running = true;
                break;
            }
        }
        census
    }

    /// Whether some thread may have been inside a block at any moment between [`Census::take`] and now: it was
    /// running then, or it has run since (it woke, ended, or a new thread appeared).
    pub(crate) fn ran_since(&self) -> bool {
        if self.alone {
            // A thread that appeared since could only have been started by this one's signal handler.
            return crate::threads::probe();
        }
        if self.running {
            return true;
        }
        let Some(tids) = other_threads() else { return true };
        let mut still = 0usize;
        for &tid in tids.as_slice() {
            if self.exiting.as_slice().contains(&tid) {
                continue;
            }
            let before = self.parked.as_slice().iter().find(|p| p.0 == tid).map(|p| p.1);
            match (before, status(tid)) {
                (Some(b), Some(Status { asleep: true, switches, .. })) if b == switches => still += 1,
                _ => return true,
            }
        }
        // A parked thread that is gone now ran to its end.
        still != self.parked.len()
    }
}

/// How long the dump at the process's end waits, at most, for the other threads to fall asleep
/// (`PATHPROF_EXIT_WAIT`, seconds; `0`: not at all). Above the 200 ms that LLVM's OpenMP runtime spins after each
/// parallel region (`KMP_BLOCKTIME`).
const EXIT_WAIT_NS: u64 = 300_000_000;

/// Before the dump at the process's end (not holding the runtime lock, so the others can finish what they
/// are doing with it): gives running threads a moment to park. Thread pools spin before they sleep, LLVM's
/// OpenMP workers for 200 ms after every parallel region, so a program that ended right after its last one
/// found every worker running, and every run of it was written apart, flagged (`FILE.<pid>.incomplete`).
/// Returns at once when the process never had another thread or every other one is asleep; otherwise polls
/// until they are or the time is up, and the census decides as before. A thread that keeps running delays the
/// end by that time; what it does meanwhile it could have done before a slower `exit`.
pub(crate) fn wait_for_others_to_park() {
    if !crate::threads::probe() {
        return;
    }
    let limit_ns = match sys::env(c"PATHPROF_EXIT_WAIT") {
        None => EXIT_WAIT_NS,
        Some(b"0") => 0,
        Some(v) => crate::timer::parse_interval(v).unwrap_or_else(|| {
            crate::diag::pp_warn!(
                "ignoring PATHPROF_EXIT_WAIT='",
                v,
                "': expected a number of seconds (0 to not wait, e.g. 0.3 or 2)"
            );
            EXIT_WAIT_NS
        }),
    };
    let mut waited_ns = 0u64;
    let mut pause_ns = 100_000u64;
    while waited_ns < limit_ns && !others_asleep() {
        sys::sleep_ns(pause_ns);
        waited_ns = waited_ns.saturating_add(pause_ns);
        pause_ns = pause_ns.saturating_mul(2).min(5_000_000);
    }
}

/// Whether every other thread is asleep in a system call or ending (as [`Census::take`] would note it); false
/// when they cannot be listed.
fn others_asleep() -> bool {
    let Some(tids) = other_threads() else { return false };
    tids.as_slice().iter().all(|&tid| matches!(status(tid), Some(Status { asleep: true, .. })) || exiting(tid))
}

/// The ids of the process's threads but this one and the timer thread; `None` if they cannot be listed. The
/// directory is closed before any status is read: a dump at exit holds the lock file's descriptor, and a program
/// that has used up its descriptors leaves the runtime only the two it holds for the dump (`fd_reserve`).
fn other_threads() -> Option<MVec<u32>> {
    let me = sys::tid();
    let timer = TIMER_TID.load(Ordering::Relaxed);
    let dir = sys::Fd::open(b"/proc/self/task\0", libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0).ok()?;
    let mut tids = MVec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: `buf` is writable for its length; getdents64 fills it with whole records.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir.raw(), buf.as_mut_ptr().cast::<c_void>(), buf.len()) };
        if n == 0 {
            return Some(tids);
        }
        if n < 0 {
            return None;
        }
        let mut at = 0usize;
        let end = usize::try_from(n).unwrap_or(0).min(buf.len());
        // Each record: d_ino (8), d_off (8), d_reclen (2), d_type (1), NUL-terminated name.
        while at + 19 < end {
            let &[lo, hi] = buf.get(at + 16..at + 18)? else { return None };
            let reclen = usize::from(u16::from_ne_bytes([lo, hi]));
            let name = buf.get(at + 19..(at + reclen).min(end)).unwrap_or(&[]);
            let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
            if let Some(tid) = sys::parse_decimal(name).filter(|&t| t != me && t != timer) {
                tids.push(tid).ok()?;
            }
            if reclen == 0 {
                return None;
            }
            at += reclen;
        }
    }
}

/// A thread's scheduling state, as far as the census needs it.
struct Status {
    /// `S`: sleeping in a system call, interruptibly; or `Z`/`X`: ended; or (see [`status`]) `D` inside a
    /// system call.
    asleep: bool,
    /// `D`: uninterruptible sleep, in a system call (disk I/O) or in a page fault (in the middle of a block).
    uninterruptible: bool,
    /// Voluntary plus involuntary context switches so far.
    switches: u64,
}

/// Reads `/proc/self/task/TID/status`; `None` if the thread is gone or the file unreadable. A thread in
/// uninterruptible sleep counts as asleep when `/proc/self/task/TID/syscall` names a system call (a page fault
/// reads `-1` there).
fn status(tid: u32) -> Option<Status> {
    let mut buf = [0u8; 4096];
    let mut s = parse_status(read_task_file(tid, b"/status", &mut buf).ok()?)?;
    if s.uninterruptible {
        let mut call = [0u8; 256];
        let first = read_task_file(tid, b"/syscall", &mut call).ok()?.split(|&c| c == b' ').next();
        s.asleep = first.and_then(|f| sys::parse_decimal(f.trim_ascii())).is_some();
    }
    Some(s)
}

/// The kernel's `PF_EXITING` task flag: the thread has begun to exit.
const PF_EXITING: u64 = 0x4;

/// Whether thread `tid` is exiting (`PF_EXITING` in field 9 of `/proc/self/task/TID/stat`) or gone already.
fn exiting(tid: u32) -> bool {
    let mut buf = [0u8; 1024];
    match read_task_file(tid, b"/stat", &mut buf) {
        Ok(stat) => stat.is_empty() || crate::threads::stat_field(stat, 9).is_some_and(|f| f & PF_EXITING != 0),
        Err(e) => e.0 == libc::ENOENT || e.0 == libc::ESRCH,
    }
}

/// Reads `/proc/self/task/TID` + `name` into `buf`; the bytes read.
fn read_task_file<'b>(tid: u32, name: &[u8], buf: &'b mut [u8]) -> Result<&'b [u8], sys::Errno> {
    let (mut task, mut path) = (MVec::new(), MVec::new());
    crate::path::sibling(b"/proc/self/task/", b"", Some(u64::from(tid)), &mut task)?;
    crate::path::sibling(task.as_slice(), name, None, &mut path)?;
    let n = sys::read_small(path.as_slice(), buf)?;
    Ok(buf.get(..n).unwrap_or(&[]))
}

/// The fields [`Status`] needs from a `status` file's text.
fn parse_status(text: &[u8]) -> Option<Status> {
    let (mut state, mut voluntary, mut involuntary) = (None, None, None);
    for line in text.split(|&c| c == b'\n') {
        let mut parts = line.splitn(2, |&c| c == b':');
        let (Some(key), Some(value)) = (parts.next(), parts.next()) else { continue };
        let value = value.trim_ascii();
        match key {
            b"State" => state = value.first().copied(),
            b"voluntary_ctxt_switches" => voluntary = sys::parse_decimal(value),
            b"nonvoluntary_ctxt_switches" => involuntary = sys::parse_decimal(value),
            _ => {}
        }
    }
    Some(Status {
        asleep: matches!(state?, b'S' | b'Z' | b'X'),
        uninterruptible: state? == b'D',
        switches: u64::from(voluntary?).saturating_add(u64::from(involuntary?)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields() {
        let text =
            b"Name:\tx\nState:\tS (sleeping)\nTgid:\t5\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        let s = parse_status(text).unwrap();
        assert!(s.asleep);
        assert_eq!(s.switches, 15);
        let running = b"State:\tR (running)\nvoluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t0\n";
        assert!(!parse_status(running).unwrap().asleep);
        let ended = b"State:\tZ (zombie)\nvoluntary_ctxt_switches:\t4\nnonvoluntary_ctxt_switches:\t0\n";
        assert!(parse_status(ended).unwrap().asleep, "a zombie main thread has no activation left");
        let faulting = b"State:\tD (disk sleep)\nvoluntary_ctxt_switches:\t4\nnonvoluntary_ctxt_switches:\t0\n";
        assert!(!parse_status(faulting).unwrap().asleep, "uninterruptible sleep may be a page fault mid-block");
        assert!(parse_status(b"State:\tS (sleeping)\n").is_none(), "switch counts missing");
    }

    /// The signs the census reads, on threads of known behaviour (the harness's other threads make a census
    /// of this process meaningless here; `test-suite`'s `threads_at_exit.c` checks the census itself).
    #[test]
    fn a_sleeping_thread_reads_asleep_without_switches_and_a_spinning_one_does_not() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let (tid_tx, tid_rx) = std::sync::mpsc::channel::<u32>();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            tid_tx.send(sys::tid()).unwrap();
            rx.recv().ok()
        });
        let sleeper_tid = tid_rx.recv().unwrap();
        let asleep = || loop {
            match status(sleeper_tid) {
                Some(s) if s.asleep => return s.switches,
                _ => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        };
        let first = asleep();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let second = status(sleeper_tid).unwrap();
        assert!(second.asleep);
        assert_eq!(second.switches, first, "no switch while it sleeps");
        assert!(!exiting(sleeper_tid), "a sleeping thread is not exiting");
        tx.send(()).unwrap();
        sleeper.join().unwrap();
        // Just joined: still listed for a moment with PF_EXITING set, or gone.
        assert!(exiting(sleeper_tid), "a joined thread is exiting or gone");

        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel::<u32>();
        let spinner = std::thread::spawn(move || {
            tid_tx.send(sys::tid()).unwrap();
            while !flag.load(Ordering::Relaxed) {}
        });
        let spinner_tid = tid_rx.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(!status(spinner_tid).unwrap().asleep, "a spinning thread is running or runnable");
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        let listed = other_threads().unwrap();
        assert!(!listed.as_slice().contains(&sys::tid()), "the calling thread is left out");
    }

    #[test]
    fn stat_flags_field() {
        let line = b"77 (a (b) c) R 1 77 77 0 -1 4194380 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0";
        let flags = crate::threads::stat_field(line, 9);
        assert_eq!(flags, Some(4194380));
        assert_ne!(flags.unwrap() & PF_EXITING, 0);
        assert_eq!(crate::threads::stat_field(b"1 (x) S 1", 9), None);
        assert_eq!(crate::threads::stat_field(b"no parenthesis", 9), None);
    }
}
