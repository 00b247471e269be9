//! Diagnostics: one line per message, assembled on the stack and written to fd 2 with a single `write(2)`, so
//! lines from concurrent processes never interleave and no stdio state of the host program is touched.
//!
//! `pp_warn!` always prints; `pp_info!` prints only with `PATHPROF_VERBOSE` set to anything but `0`.
//!
//! # What may reach the program's stderr
//! The runtime's output lands in the instrumented program's stderr, which test suites and scripts compare, so a
//! healthy run prints nothing. `pp_warn!` is for what the user must act on or the profile cannot vouch for: the
//! profile cannot be written (one line per dump; the interval timer reports only its first failure), the file
//! it would merge into is not a valid profile and is replaced, a record is inconsistent (a hash collision or a
//! corrupt writer), a module cannot be registered (another descriptor version, a malformed descriptor), counts
//! were dropped (a full or failed path table: the record is flagged incomplete), a setting is invalid
//! (`PATHPROF_DUMP_INTERVAL`), a fatal-signal flush could not write or went to another file. Everything that
//! is expected in healthy use is `pp_info!`: replacing the counts of an older build of a module (every rebuild
//! does that), merging without a lock on a file system that has none, a module registered twice.
//!
//! Messages are built from [`Part`]s (string literals, byte strings such as paths, numbers, errno values) instead of
//! `core::fmt`, which keeps formatting machinery and its panic paths out of the archive.

use crate::sys::Errno;

/// Longest line written; longer messages are cut (the newline is always kept).
const LINE_MAX: usize = 1024;

/// A message line being assembled.
pub(crate) struct Line {
    buf: [u8; LINE_MAX],
    len: usize,
}

/// Something that can be appended to a [`Line`].
pub(crate) trait Part {
    /// Appends `self` to `line`.
    fn put(self, line: &mut Line);
}

/// A number printed in decimal.
pub(crate) struct Dec(pub(crate) u64);
/// A number printed as `0x` and 16 hex digits.
pub(crate) struct Hex(pub(crate) u64);

impl Line {
    /// A line starting with `prefix`.
    pub(crate) fn new(prefix: &str) -> Line {
        let mut l = Line { buf: [0; LINE_MAX], len: 0 };
        l.bytes(prefix.as_bytes());
        l
    }

    /// Appends raw bytes, cutting at the line limit (one byte is kept for the newline).
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        for &c in b {
            match self.buf.get_mut(self.len) {
                Some(slot) if self.len + 1 < LINE_MAX => {
                    *slot = c;
                    self.len += 1;
                }
                _ => return,
            }
        }
    }

    /// Terminates the line and writes it to stderr in one call; errors are ignored (there is nowhere to report
    /// them).
    pub(crate) fn emit(mut self) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b'\n';
            self.len += 1;
        }
        let out = self.buf.get(..self.len).unwrap_or(&[]);
        // SAFETY: `out` is a valid buffer; a short or failed write of a diagnostic is deliberately ignored.
        crate::sys::without_write_signals(|| unsafe { libc::write(2, out.as_ptr().cast(), out.len()) });
    }
}

impl Part for &str {
    fn put(self, line: &mut Line) {
        line.bytes(self.as_bytes());
    }
}

impl Part for &[u8] {
    fn put(self, line: &mut Line) {
        // Paths are NUL-terminated internally; never print the terminator.
        let b = match self.split_last() {
            Some((0, head)) => head,
            _ => self,
        };
        line.bytes(b);
    }
}

impl Part for Dec {
    fn put(self, line: &mut Line) {
        line.bytes(crate::sys::decimal(self.0, &mut [0; 20]));
    }
}

impl Part for Hex {
    fn put(self, line: &mut Line) {
        line.bytes(b"0x");
        line.bytes(&hex16(self.0));
    }
}

impl Part for Errno {
    fn put(self, line: &mut Line) {
        if crate::sys::in_signal() {
            // strerror may consult locale data: not async-signal-safe.
            line.bytes(b"error ");
            Dec(self.0 as u64).put(line);
            return;
        }
        // SAFETY: strerror returns a valid NUL-terminated string (glibc's is thread-safe for known codes and
        // uses a thread-local buffer for unknown ones).
        let s = unsafe { crate::sys::cstr_bytes(libc::strerror(self.0)) };
        line.bytes(s);
    }
}

/// The 16 lower-case hex digits of `v`.
pub(crate) fn hex16(v: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, slot) in out.iter_mut().enumerate() {
        let nib = (v >> (60 - 4 * i)) & 0xf;
        *slot = if nib < 10 { b'0' + nib as u8 } else { b'a' + (nib as u8 - 10) };
    }
    out
}

/// Whether `PATHPROF_VERBOSE` asks for informational lines.
pub(crate) fn verbose() -> bool {
    !matches!(crate::sys::env(c"PATHPROF_VERBOSE"), None | Some(b"0"))
}

/// Prints `pathprof: warning: ` followed by the parts, as one line on stderr.
macro_rules! pp_warn {
    ($($part:expr),+ $(,)?) => {{
        let mut line = $crate::diag::Line::new("pathprof: warning: ");
        $( $crate::diag::Part::put($part, &mut line); )+
        line.emit();
    }};
}

/// Prints `pathprof: ` followed by the parts when `PATHPROF_VERBOSE` is set.
macro_rules! pp_info {
    ($($part:expr),+ $(,)?) => {{
        if $crate::diag::verbose() {
            let mut line = $crate::diag::Line::new("pathprof: ");
            $( $crate::diag::Part::put($part, &mut line); )+
            line.emit();
        }
    }};
}

pub(crate) use {pp_info, pp_warn};
