//! Whether the process has ever run more than one thread: the condition under which counters of a module built
//! without `--pathprof-atomic` may have lost increments, so that its record is flagged
//! [`RECORD_FLAG_THREADED_NONATOMIC`](pathprof_format::layout::RECORD_FLAG_THREADED_NONATOMIC).
//!
//! The runtime sees neither thread creation nor the counter updates, so it asks the system, at the first
//! registration, at every dump (after draining, so every thread that could have contributed to the drained
//! counts already existed) and at every interval-timer tick. The answer is sticky: once seen, it stays set for
//! the process. Three independent signs, any of which sets it:
//!
//! 1. glibc's `__libc_single_threaded` (glibc 2.32 and later, looked up with `dlsym` at the first
//!    registration): cleared by the first `pthread_create` and, in every glibc release so far, never set again
//!    while the process lives. This alone is sound for threads created with `pthread_create`.
//! 2. `/proc/self/stat`'s `num_threads` above 1 at a sample point (threads alive at that moment, however they
//!    were created).
//! 3. CPU time: `getrusage(RUSAGE_SELF)` (all threads of the process, including ones that have exited) exceeds
//!    `getrusage(RUSAGE_THREAD)` of the sampling thread by more than the 2 µs that rounding can explain. This
//!    catches threads created without `pthread_create` (raw `clone`) that ran for a few microseconds or more and
//!    exited between samples.
//!
//! Flagging too often is acceptable (the counts are then only called inexact); missing a lossy run is not. False
//! positives: a process that `exec`s from a multi-threaded image keeps its CPU-time totals; the interval timer
//! thread (`PATHPROF_DUMP_INTERVAL`) counts as a thread, deliberately: its dumps drain non-atomic counters
//! while the program increments them. A `fork()`ed child starts over (its counters start at zero).
//!
//! Only modules without `DESC_FLAG_ATOMIC` that update something with plain adds (dense counters, sparse
//! regions, path-table caches and the tables' plain fast path) are flagged. Everything here is
//! async-signal-safe (system calls and loads only).

use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// Sticky: the process has been seen with more than one thread.
static EVER: AtomicBool = AtomicBool::new(false);
/// Address of glibc's `__libc_single_threaded`, or null.
static SINGLE: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());

/// Looks up `__libc_single_threaded` and takes the first sample; called once, at the first registration.
pub(crate) fn init() {
    // SAFETY: dlsym with a valid NUL-terminated name; a null result just means "not glibc 2.32+".
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__libc_single_threaded".as_ptr()) };
    SINGLE.store(p.cast::<u8>(), Ordering::Relaxed);
    probe();
}

/// Samples the signs; returns whether the process has ever had more than one thread.
pub(crate) fn probe() -> bool {
    if EVER.load(Ordering::Relaxed) {
        return true;
    }
    let now = glibc_says_threaded() || proc_num_threads() > 1 || others_used_cpu();
    if now {
        EVER.store(true, Ordering::Relaxed);
    }
    now
}

/// In a `fork()`ed child: its counters start at zero, so earlier threads of the parent do not matter.
pub(crate) fn fork_child() {
    EVER.store(false, Ordering::Relaxed);
}

fn glibc_says_threaded() -> bool {
    let p = SINGLE.load(Ordering::Relaxed);
    // SAFETY: the address of glibc's `char __libc_single_threaded`, valid for the life of the process; a
    // volatile byte read of a variable glibc only writes with plain stores.
    !p.is_null() && unsafe { core::ptr::read_volatile(p) } == 0
}

/// `num_threads` (field 20) of `/proc/self/stat`, or 0 if unavailable.
fn proc_num_threads() -> u64 {
    let mut buf = [0u8; 1024];
    let len = crate::sys::read_small(b"/proc/self/stat\0", &mut buf).unwrap_or(0);
    parse_num_threads(buf.get(..len).unwrap_or(&[]))
}

/// Field 20 of a `/proc/<pid>/stat` line, or 0.
fn parse_num_threads(stat: &[u8]) -> u64 {
    stat_field(stat, 20).unwrap_or(0)
}

/// Decimal field `n` (3 or more) of a `/proc/<pid>/stat` or `/proc/<pid>/task/<tid>/stat` line; the command
/// name (field 2) may contain spaces and parentheses, so fields are counted after its last `)`.
pub(crate) fn stat_field(stat: &[u8], n: usize) -> Option<u64> {
    let close = stat.iter().rposition(|&c| c == b')')?;
    let after = stat.get(close + 1..)?;
    let field = after.split(|&c| c == b' ').filter(|f| !f.is_empty()).nth(n.checked_sub(3)?)?;
    field.iter().try_fold(0u64, |acc, &c| {
        c.is_ascii_digit().then(|| acc.saturating_mul(10).saturating_add(u64::from(c - b'0')))
    })
}

/// Whether threads other than the calling one have used measurable CPU time (see the module docs).
fn others_used_cpu() -> bool {
    // SAFETY: all-zero rusage values are valid; getrusage fills them.
    let mut all: libc::rusage = unsafe { core::mem::zeroed() };
    let mut me: libc::rusage = unsafe { core::mem::zeroed() };
    // Process first, then thread: in a single-threaded process the second reading can only be larger.
    // SAFETY: valid out-pointers.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut all) } != 0 {
        return false;
    }
    // SAFETY: as above.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut me) } != 0 {
        return false;
    }
    #[allow(clippy::unnecessary_cast)] // time_t and suseconds_t are i64 here, narrower elsewhere
    let us = |r: &libc::rusage| {
        let t = |tv: libc::timeval| (tv.tv_sec as i64).saturating_mul(1_000_000).saturating_add(tv.tv_usec as i64);
        t(r.ru_utime).saturating_add(t(r.ru_stime))
    };
    us(&all).saturating_sub(us(&me)) > 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_threads_field() {
        let line = b"1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 7 0 12345 1000 10";
        assert_eq!(parse_num_threads(line), 7);
        assert_eq!(parse_num_threads(b"garbage"), 0);
        assert_eq!(parse_num_threads(b"1 (x) S 1"), 0);
    }

    #[test]
    fn the_test_process_is_seen_threaded() {
        // The test harness runs tests on worker threads.
        let t = std::thread::spawn(|| {
            let mut x = 0u64;
            for i in 0..1_000_000u64 {
                x = x.wrapping_add(i * i);
            }
            x
        });
        let _ = t.join();
        init();
        assert!(probe());
    }
}
