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

use crate::sys::{Errno, MVec};

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

fn push_dec(out: &mut MVec<u8>, mut n: u64) -> Result<(), Errno> {
    let mut digits = [0u8; 20];
    let mut len = 0usize;
    loop {
        if let Some(d) = digits.get_mut(len) {
            *d = b'0' + (n % 10) as u8;
        }
        len += 1;
        n /= 10;
        if n == 0 || len == digits.len() {
            break;
        }
    }
    for k in (0..len).rev() {
        out.push(digits.get(k).copied().unwrap_or(b'0'))?;
    }
    Ok(())
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
        let vars = Vars { pid: 42, host: b"box", tmpdir: b"/tmp", signature: 0xab };
        let mut out = MVec::new();
        expand(p.as_bytes(), &vars, &mut out).unwrap();
        let s = out.as_slice();
        assert_eq!(s.last(), Some(&0));
        std::string::String::from_utf8(s[..s.len() - 1].to_vec()).unwrap()
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
