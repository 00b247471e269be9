//! The profile's lock (`FILE.lock`): every writer of `FILE` serialises on `flock` of it (see [`crate::dump`]).
//!
//! A writer that holds the lock writes its pid into the lock file, so that a waiter can tell a holder that
//! cannot go on from a slow one. A holder stopped by `SIGSTOP` or a debugger while it held the lock would
//! otherwise block every sibling forever — and a shell that stopped one job and waits for another (bash's own
//! job-control tests) never continues it. A waiter polls the lock (from 50 µs up to 5 ms apart), and gives up
//! when the recorded holder is stopped (`T` or `t` in `/proc/PID/stat`) or after [`PATIENCE_NS`]: its caller
//! then writes apart. A holder is taken for stopped only when two attempts in a row see it so: between a new
//! holder's `flock` and its pid's write (microseconds) the file still names the previous holder, which may be
//! stopped by then (a shell's job, after it wrote its profile). A holder whose pid the waiter cannot see
//! (another pid namespace) only costs the patience.

use crate::sys::{self, Errno, Fd};

/// What [`acquire`] got.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Acquired {
    /// The lock is ours (or the file system has no locks: the dump goes on unlocked, as compiler-rt's does).
    Held,
    /// Another process holds the lock and is stopped (its pid): waiting could last forever.
    HolderStopped(u32),
    /// Another process held the lock for longer than [`PATIENCE_NS`].
    TimedOut,
}

impl Acquired {
    /// Why the lock was not taken, for a verbose note.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Acquired::Held => "held",
            Acquired::HolderStopped(_) => "its holder is stopped",
            Acquired::TimedOut => "for longer than a minute",
        }
    }
}

/// How long a writer waits for a holder that is not stopped: far longer than any profile write takes, short
/// enough that a holder hung on a dead network file system does not hang its siblings with it.
pub(crate) const PATIENCE_NS: u64 = 60_000_000_000;
/// The first and the longest pause between two attempts.
const FIRST_PAUSE_NS: u64 = 50_000;
const LONGEST_PAUSE_NS: u64 = 5_000_000;
/// The width of the holder's pid in the lock file (digits, spaces, a newline): written in place, never
/// truncated, so a reader never sees a shorter file.
const PID_FIELD: usize = 12;

/// Takes the lock on `fd` (the open lock file), waiting as described in the module's documentation; `pid`:
/// this process's, recorded once held.
pub(crate) fn acquire(fd: &Fd, pid: u32) -> Acquired {
    let start = crate::signals::now_ns();
    let mut pause = FIRST_PAUSE_NS;
    // The holder seen stopped at the previous attempt: only a second sighting counts, so that a previous
    // holder still named in the file by a new one that has not written its pid yet is not taken for it.
    let mut seen_stopped = None;
    loop {
        if try_acquire(fd, pid) {
            return Acquired::Held;
        }
        let stopped = holder(fd).filter(|&h| h != pid && is_stopped(h));
        if let Some(h) = stopped.filter(|&h| seen_stopped == Some(h)) {
            return Acquired::HolderStopped(h);
        }
        seen_stopped = stopped;
        if crate::signals::now_ns().saturating_sub(start) >= PATIENCE_NS {
            return Acquired::TimedOut;
        }
        sys::sleep_ns(pause);
        pause = (pause * 2).min(LONGEST_PAUSE_NS);
    }
}

/// `flock(LOCK_EX | LOCK_NB)` on `fd`, recording `pid` when held; false only if another open file description
/// holds the lock (a file system without locks counts as held, with a verbose note).
pub(crate) fn try_acquire(fd: &Fd, pid: u32) -> bool {
    match fd.flock(libc::LOCK_EX | libc::LOCK_NB) {
        Ok(()) => {
            record_holder(fd, pid);
            true
        }
        Err(Errno(libc::EWOULDBLOCK)) => false,
        Err(e) => {
            crate::diag::pp_info!("cannot lock the profile (", e, "); merging without a lock");
            true
        }
    }
}

/// Releases the lock (a no-op when it was never held).
pub(crate) fn release(fd: &Fd) {
    let _ = fd.flock(libc::LOCK_UN);
}

/// Writes `pid` at the start of the lock file. A failure (a read-only lock file another user created) only
/// leaves waiters without the holder's name: they wait their patience.
fn record_holder(fd: &Fd, pid: u32) {
    let mut field = [b' '; PID_FIELD];
    for (slot, &d) in field.iter_mut().zip(sys::decimal(u64::from(pid), &mut [0; 20])) {
        *slot = d;
    }
    if let Some(last) = field.last_mut() {
        *last = b'\n';
    }
    let _ = fd.write_all_at(&field, 0);
}

/// The pid the lock file names, if it names one (a pid is never 0).
fn holder(fd: &Fd) -> Option<u32> {
    let mut field = [0u8; PID_FIELD];
    fd.read_exact_at(&mut field, 0).ok()?;
    let digits = field.iter().take_while(|b| b.is_ascii_digit()).count();
    sys::parse_decimal(field.get(..digits)?).filter(|&pid| pid != 0)
}

/// Whether process `pid` is stopped: its state, the field after the command's closing parenthesis in
/// `/proc/PID/stat`, is `T` (a stop signal) or `t` (a tracer's stop). False when it cannot be read.
fn is_stopped(pid: u32) -> bool {
    let mut path = [0u8; 32];
    let mut at = 0;
    for part in [&b"/proc/"[..], sys::decimal(u64::from(pid), &mut [0; 20]), b"/stat\0"] {
        for &b in part {
            let Some(slot) = path.get_mut(at) else { return false };
            *slot = b;
            at += 1;
        }
    }
    let mut buf = [0u8; 512];
    let Ok(n) = sys::read_small(&path, &mut buf) else { return false };
    state_of(buf.get(..n).unwrap_or(&[])).is_some_and(|s| s == b'T' || s == b't')
}

/// The state letter of a `/proc/PID/stat` line: the first field after the command's last `)` (the command may
/// hold `)` itself).
fn state_of(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat.get(close + 1..)?.iter().copied().find(|&b| b != b' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_is_read_after_the_last_parenthesis() {
        assert_eq!(state_of(b"12 (sh) T 1 12 12 0"), Some(b'T'));
        assert_eq!(state_of(b"12 (a) R (b)) t 1"), Some(b't'));
        assert_eq!(state_of(b"12 (no end"), None);
    }

    /// The holder's pid read back is the one written; a stopped child reads as stopped, a running one not.
    #[test]
    fn a_stopped_holder_is_told_from_a_running_one() {
        let dir = std::env::temp_dir().join(std::format!("pathprof-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p.lock\0");
        let fd = Fd::open(file.to_str().unwrap().as_bytes(), libc::O_RDWR | libc::O_CREAT, 0o644).unwrap();
        assert_eq!(holder(&fd), None, "an empty lock file names no holder");
        record_holder(&fd, 4_000_123);
        assert_eq!(holder(&fd), Some(4_000_123));
        record_holder(&fd, 7);
        assert_eq!(holder(&fd), Some(7), "a shorter pid overwrites a longer one in place");

        let mut child = std::process::Command::new("sleep").arg("60").spawn().unwrap();
        let pid = child.id();
        assert!(!is_stopped(pid));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        let stopped = (0..1000).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            is_stopped(pid)
        });
        child.kill().unwrap();
        child.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(stopped, "a SIGSTOPped child reads as stopped");
    }
}
