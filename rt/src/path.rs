//! The profile file name: `$PATHPROF_FILE` (an empty value counts as unset) or `default.pathprof`, with the
//! pattern specifiers of LLVM's `LLVM_PROFILE_FILE`:
//!
//! | specifier | expands to |
//! |-----------|------------|
//! | `%p`      | the process id (so a `fork()`ed child writes its own file) |
//! | `%h`      | the host name |
//! | `%m`, `%Nm` | the runtime copy's module signature: 16 hex digits of a hash over the registered modules' `meta_hash`es, independent of registration order, so different binaries use different files. `N` is accepted for compatibility and ignored: writers merge under a lock, so one file per binary needs no pool |
//! | `%t`      | `$TMPDIR`, or `/tmp` when unset |
//! | `%%`      | a literal `%` |
//!
//! Any other `%x` is kept literally. The name is expanded at every dump, so `%p` follows `fork()`.
//!
//! A relative name is resolved against the directory the program was started in (the working directory at
//! the first registration, [`note_start_dir`]), not the one it is in at the dump: a program that `chdir`s —
//! a shell script's `cd`, `make -C`, a test that works in a temporary directory it then removes — writes its
//! profile where it was run, like the programs that never move. The variables are read then too.

use crate::sys::{Errno, MVec};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// A value taken once per process image, at the first registration (`state`: 0 not taken, 1 being taken, 2
/// taken; `len` is `usize::MAX` for "none": unset, or `getcwd` failed, or too long for the buffer).
struct Snapshot {
    state: AtomicU8,
    len: AtomicUsize,
    buf: UnsafeCell<[u8; 4096]>,
}
// SAFETY: `buf` is written once, by the thread that moved `state` from 0 to 1, and read only after `state` is 2.
unsafe impl Sync for Snapshot {}

impl Snapshot {
    const fn new() -> Snapshot {
        Snapshot { state: AtomicU8::new(0), len: AtomicUsize::new(usize::MAX), buf: UnsafeCell::new([0; 4096]) }
    }

    /// Takes the value `fill` writes into the buffer (its length, or None), unless taken already.
    fn take(&self, fill: impl FnOnce(&mut [u8; 4096]) -> Option<usize>) {
        if self.state.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return;
        }
        // SAFETY: only this thread writes the buffer (state 1).
        let len = fill(unsafe { &mut *self.buf.get() }).unwrap_or(usize::MAX);
        self.len.store(len, Ordering::Relaxed);
        self.state.store(2, Ordering::Release);
    }

    /// Whether the value was taken; then the value (None: none).
    fn get(&'static self) -> Option<Option<&'static [u8]>> {
        if self.state.load(Ordering::Acquire) != 2 {
            return None;
        }
        let len = self.len.load(Ordering::Relaxed);
        // SAFETY: written before state became 2 and never again; len ≤ 4096 when not MAX.
        Some((len != usize::MAX).then(|| unsafe { core::slice::from_raw_parts(self.buf.get() as *const u8, len) }))
    }
}

/// The working directory at the first registration, and the file name variables then: a program that clears
/// or changes its environment (`clearenv`, `env -i`, before an `exec`) still writes where the user said.
static START_DIR: Snapshot = Snapshot::new();
static FILE_VAR: Snapshot = Snapshot::new();
static TRACE_VAR: Snapshot = Snapshot::new();
/// Set when `PATHPROF_FILE` or `PATHPROF_TRACE` was too long to keep: it is then read at every use.
static LONG_VAR: AtomicU8 = AtomicU8::new(0);

/// Takes the start directory and the values of `PATHPROF_FILE` and `PATHPROF_TRACE`, once per process image
/// (a fork child keeps its parent's).
pub(crate) fn note_start_dir() {
    START_DIR.take(|buf| {
        // SAFETY: buf has 4096 writable bytes; getcwd NUL-terminates what it writes.
        let ok = !unsafe { libc::getcwd(buf.as_mut_ptr().cast(), buf.len()) }.is_null();
        ok.then(|| buf.iter().position(|&c| c == 0).unwrap_or(0))
    });
    for (snapshot, name, bit) in [(&FILE_VAR, c"PATHPROF_FILE", 1u8), (&TRACE_VAR, c"PATHPROF_TRACE", 2)] {
        snapshot.take(|buf| {
            let v = crate::sys::env(name)?;
            if v.len() > buf.len() {
                LONG_VAR.fetch_or(bit, Ordering::Relaxed);
                return None;
            }
            buf.get_mut(..v.len())?.copy_from_slice(v);
            Some(v.len())
        });
    }
}

/// The start directory (empty before [`note_start_dir`] or if `getcwd` failed).
pub(crate) fn start_dir() -> &'static [u8] {
    START_DIR.get().flatten().unwrap_or(&[])
}

/// The profile file pattern: `PATHPROF_FILE` as it was at the first registration, or [`DEFAULT_FILE`].
pub(crate) fn profile_pattern() -> &'static [u8] {
    variable(&FILE_VAR, c"PATHPROF_FILE", 1).unwrap_or(DEFAULT_FILE)
}

/// The trace file pattern: `PATHPROF_TRACE` as it was at the first registration, or `default.pathtrace`.
pub(crate) fn trace_pattern() -> &'static [u8] {
    variable(&TRACE_VAR, c"PATHPROF_TRACE", 2).unwrap_or(b"default.pathtrace")
}

fn variable(snapshot: &'static Snapshot, name: &core::ffi::CStr, bit: u8) -> Option<&'static [u8]> {
    match snapshot.get() {
        Some(_) if LONG_VAR.load(Ordering::Relaxed) & bit != 0 => crate::sys::env(name),
        Some(v) => v,
        None => crate::sys::env(name),
    }
}

/// The file written when `PATHPROF_FILE` is unset or empty.
pub(crate) const DEFAULT_FILE: &[u8] = b"default.pathprof";

/// The values substituted into a pattern.
pub(crate) struct Vars<'a> {
    /// `%p`.
    pub(crate) pid: u32,
    /// `%h`.
    pub(crate) host: &'a [u8],
    /// `%t`.
    pub(crate) tmpdir: &'a [u8],
    /// `%m`.
    pub(crate) signature: u64,
    /// The directory a relative name is resolved against (empty: left relative).
    pub(crate) start_dir: &'a [u8],
}

/// Expands `pattern` into `out` and NUL-terminates it.
pub(crate) fn expand(pattern: &[u8], vars: &Vars<'_>, out: &mut MVec<u8>) -> Result<(), Errno> {
    out.clear();
    let mut i = 0usize;
    while let Some(&c) = pattern.get(i) {
        i += 1;
        if c != b'%' {
            out.push(c)?;
            continue;
        }
        // Optional pool size digits, meaningful only before `m`.
        let mut j = i;
        while matches!(pattern.get(j), Some(b'0'..=b'9')) {
            j += 1;
        }
        match (pattern.get(j), j > i) {
            (Some(b'm'), _) => {
                out.extend_from_slice(&crate::diag::hex16(vars.signature))?;
                i = j + 1;
            }
            (Some(b'p'), false) => {
                push_dec(out, vars.pid as u64)?;
                i += 1;
            }
            (Some(b'h'), false) => {
                out.extend_from_slice(vars.host)?;
                i += 1;
            }
            (Some(b't'), false) => {
                out.extend_from_slice(vars.tmpdir)?;
                i += 1;
            }
            (Some(b'%'), false) => {
                out.push(b'%')?;
                i += 1;
            }
            // Unknown specifier or a trailing `%`: kept as written.
            _ => out.push(b'%')?,
        }
    }
    if out.as_slice().first() != Some(&b'/') && !vars.start_dir.is_empty() {
        let mut absolute = MVec::new();
        absolute.extend_from_slice(vars.start_dir)?;
        if vars.start_dir.last() != Some(&b'/') {
            absolute.push(b'/')?;
        }
        absolute.extend_from_slice(out.as_slice())?;
        *out = absolute;
    }
    out.push(0)
}

/// `base` (NUL-terminated) with `suffix` and, if given, a decimal number appended; NUL-terminated.
pub(crate) fn sibling(base: &[u8], suffix: &[u8], num: Option<u64>, out: &mut MVec<u8>) -> Result<(), Errno> {
    out.clear();
    let stem = match base.split_last() {
        Some((0, head)) => head,
        _ => base,
    };
    out.extend_from_slice(stem)?;
    out.extend_from_slice(suffix)?;
    if let Some(n) = num {
        push_dec(out, n)?;
    }
    out.push(0)
}

fn push_dec(out: &mut MVec<u8>, n: u64) -> Result<(), Errno> {
    out.extend_from_slice(crate::sys::decimal(n, &mut [0; 20]))
}

/// The host name (empty if unavailable).
pub(crate) fn hostname(buf: &mut [u8; 256]) -> &[u8] {
    // SAFETY: buf is writable for its length; we keep the last byte as terminator.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) } == 0;
    if !ok {
        return &[];
    }
    let n = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    buf.get(..n).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(p: &str) -> std::string::String {
        exp_in(p, b"")
    }

    fn exp_in(p: &str, start_dir: &[u8]) -> std::string::String {
        let vars = Vars { pid: 42, host: b"box", tmpdir: b"/tmp", signature: 0xab, start_dir };
        let mut out = MVec::new();
        expand(p.as_bytes(), &vars, &mut out).unwrap();
        let s = out.as_slice();
        assert_eq!(s.last(), Some(&0));
        std::string::String::from_utf8(s[..s.len() - 1].to_vec()).unwrap()
    }

    #[test]
    fn relative_names_are_resolved_against_the_start_directory() {
        assert_eq!(exp_in("default.pathprof", b"/home/u/run"), "/home/u/run/default.pathprof");
        assert_eq!(exp_in("out/p-%p", b"/"), "/out/p-42");
        assert_eq!(exp_in("/abs/p", b"/home/u"), "/abs/p");
        assert_eq!(exp_in("%t/p", b"/home/u"), "/tmp/p");
        assert_eq!(exp_in("rel", b""), "rel");
    }

    #[test]
    fn expands_llvm_specifiers() {
        assert_eq!(exp("a-%p.pathprof"), "a-42.pathprof");
        assert_eq!(exp("%h/%t/%%"), "box//tmp/%");
        assert_eq!(exp("x%my"), "x00000000000000aby");
        assert_eq!(exp("x%8my"), "x00000000000000aby");
        assert_eq!(exp("%q%8p%"), "%q%8p%");
        assert_eq!(exp(""), "");
    }

    #[test]
    fn sibling_names() {
        let mut out = MVec::new();
        sibling(b"f.pathprof\0", b".tmp.", Some(1234), &mut out).unwrap();
        assert_eq!(out.as_slice(), b"f.pathprof.tmp.1234\0");
        sibling(b"f\0", b".lock", None, &mut out).unwrap();
        assert_eq!(out.as_slice(), b"f.lock\0");
    }
}
