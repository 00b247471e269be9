//! Periodic dumps for long-running programs: `PATHPROF_DUMP_INTERVAL=SECONDS` (read at the first registration;
//! a positive decimal number such as `30` or `0.5`, millisecond resolution, at most one day) starts one thread
//! that calls the dump every SECONDS, so the profile file exists and grows while the program runs.
//!
//! - The thread is created with every signal blocked (so it never runs the program's signal handlers, and
//!   process-directed signals such as SIGTERM go to the program's threads) and detached; it sleeps on the
//!   monotonic clock with absolute deadlines, so dumps do not drift.
//! - Each tick is a normal `__pathprof_dump()` under the runtime lock: the file always holds everything counted
//!   up to the last tick. The exit dump marks the runtime as exiting under the same lock, after which ticks do
//!   nothing, so no tick writes during or after the exit dump.
//! - A failing tick prints the usual one warning line the first time only; later ticks retry silently.
//! - Exact snapshots need atomic counters (`--pathprof-atomic`): a dump drains a non-atomic counter with a
//!   load and a store, and an increment by the program between the two is lost. The timer thread makes the
//!   process multi-threaded, so records of non-atomic modules are flagged `THREADED_NONATOMIC` (see
//!   [`crate::threads`]), truthfully.
//! - A `fork()`ed child has no timer thread (threads do not survive `fork`); it writes its counts at exit.
//! - A runtime copy in a shared object that starts the timer pins its object (`RTLD_NODELETE`), so `dlclose`
//!   never unmaps code the thread runs; the object's counts are then written by the ticks and at exit rather
//!   than at `dlclose`.
//!
//! An invalid value is ignored with one warning line.

use crate::diag::pp_warn;
use core::ffi::c_void;

/// Longest accepted interval.
const MAX_NS: u64 = 86_400 * 1_000_000_000;

/// Parses SECONDS into nanoseconds: digits, optionally `.` and up to three more digits; positive, at most a day.
pub(crate) fn parse_interval(s: &[u8]) -> Option<u64> {
    let (int, frac) = match s.iter().position(|&c| c == b'.') {
        Some(dot) => (s.get(..dot)?, s.get(dot + 1..)?),
        None => (s, &[][..]),
    };
    if int.is_empty() && frac.is_empty() || int.len() > 6 || frac.len() > 3 {
        return None;
    }
    let digits =
        |d: &[u8]| d.iter().try_fold(0u64, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + u64::from(c - b'0')));
    let secs = digits(int)?;
    let mut ms = digits(frac)?;
    for _ in frac.len()..3 {
        ms *= 10;
    }
    let ns = secs * 1_000_000_000 + ms * 1_000_000;
    (ns > 0 && ns <= MAX_NS).then_some(ns)
}

/// Starts the timer thread for `PATHPROF_DUMP_INTERVAL=value`.
pub(crate) fn start(value: &[u8]) {
    let Some(ns) = parse_interval(value) else {
        pp_warn!(
            "ignoring PATHPROF_DUMP_INTERVAL='",
            value,
            "': expected a positive number of seconds (at most 86400, e.g. 30 or 0.5)"
        );
        return;
    };
    // The thread starts with every signal blocked (it inherits the mask it is created under), so the program's
    // signals never run their handlers on it.
    // SAFETY: plain pthread calls on local, initialised values; the result is checked.
    let rc = crate::sys::with_signals_blocked(|| unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
        libc::pthread_attr_setstacksize(&mut attr, 256 * 1024);
        let mut tid: libc::pthread_t = core::mem::zeroed();
        let rc = libc::pthread_create(&mut tid, &attr, timer_main, ns as usize as *mut c_void);
        libc::pthread_attr_destroy(&mut attr);
        rc
    });
    if rc != 0 {
        pp_warn!("cannot start the PATHPROF_DUMP_INTERVAL thread (", crate::sys::Errno(rc), "); dumping at exit only");
    }
}

extern "C" fn timer_main(arg: *mut c_void) -> *mut c_void {
    crate::in_flight::note_timer_thread();
    let ns = arg as usize as u64;
    let mut next = crate::signals::now_ns();
    loop {
        next = next.saturating_add(ns);
        let ts = libc::timespec {
            tv_sec: (next / 1_000_000_000) as libc::time_t,
            tv_nsec: (next % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: valid timespec; EINTR cannot happen (all signals blocked) and would only shorten one sleep.
        while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, core::ptr::null_mut()) }
            == libc::EINTR
        {}
        if !crate::timer_tick() {
            return core::ptr::null_mut();
        }
        // A tick that took longer than the interval is not repeated to catch up.
        next = next.max(crate::signals::now_ns());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval(b"30"), Some(30_000_000_000));
        assert_eq!(parse_interval(b"0.5"), Some(500_000_000));
        assert_eq!(parse_interval(b".25"), Some(250_000_000));
        assert_eq!(parse_interval(b"1.001"), Some(1_001_000_000));
        assert_eq!(parse_interval(b"86400"), Some(MAX_NS));
        for bad in [&b""[..], b"0", b"0.0", b"-1", b"1s", b"1.0001", b"86401", b".", b"1e3", b"9999999"] {
            assert_eq!(parse_interval(bad), None, "{:?}", core::str::from_utf8(bad));
        }
    }
}
