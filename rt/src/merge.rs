//! Validating an existing profile and building the merged file image: pure functions over byte slices, so the
//! unit tests exercise them without a file system. The byte layout is `pathprof_format::layout`'s (its header
//! comment is the spec); nothing here redefines it.
//!
//! # Merge rules (one record per module build, identified by `meta_hash`)
//! - A file record whose `meta_hash` equals a registered module's gets that module's drained counters added,
//!   `runs` increased by one if this process has not yet been counted for it, and flags ORed. Its sparse
//!   entries (path counts of hashed path-mode functions) and the module's drained table counts are summed per
//!   (function, path) with **wrapping** addition (path counts are read as signed; see below), entries that end
//!   at 0 are dropped, and the result is sorted by (function, path), so the bytes of a record do not depend on
//!   hash-table order.
//! - A file record with such a `meta_hash` but a different metadata length, metadata bytes or counter count
//!   cannot be the same build (a hash collision or a corrupt writer): it is dropped with a warning and the module
//!   gets a fresh record.
//! - A file record whose `name_hash` equals a registered module's while its `meta_hash` matches none is an
//!   older build of that module: its counts would be meaningless against the new metadata, so it is dropped
//!   (a verbose note: after a rebuild this is the expected case). `name_hash` covers the module's name and
//!   output (`pathprof_format::layout::module_identity_hash`), so modules of one name in different executables
//!   or shared objects never take each other for an older build.
//! - Every other file record (say, a library that an earlier run `dlopen`ed) is copied unchanged.
//! - Registered modules with no record in the file are appended, in registration order, with `runs` = 1.
//!
//! Counters, like sparse entries, add modulo 2^64. Path-mode counts are read as signed (two's complement):
//! today's instrumentation only adds, but a module instrumented before truncated paths counted arrivals
//! (metadata without `path_arrivals`) took −1 after a call returned, so one dump could drain a path's +1 and a
//! later one its −1, and only wrapping addition sums those exactly.
//! Edge-mode counts are unsigned, and wrapping differs from any other rule only past 2^64 − 1 counts, which no
//! run reaches (the runtime cannot tell the modes apart without decoding the metadata).
//!
//! Several registered copies of one build (the same object linked into two shared objects) arrive here already
//! grouped: one [`Group`] whose counters are the sum of the copies.

use crate::sys::{Errno, MVec};
use pathprof_format::layout::{
    fnv1a64, fnv1a64_continue, pad8, record_len, FileHeader, PathTable, RecordHeader, FILE_HEADER_LEN, FILE_VERSION,
    RECORD_HEADER_LEN, SPARSE_ENTRY_LEN,
};
use pathprof_format::records::{self, Record, Records, WireError};

/// Why an existing file is not a profile this runtime can merge into (it is then replaced, with a warning).
pub(crate) type Invalid = &'static str;

/// One drained path count of a hashed path-mode function.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PathCount {
    /// The function's index in the module metadata.
    pub(crate) function: u64,
    /// The path number.
    pub(crate) path: u64,
    /// The count (signed, two's complement).
    pub(crate) count: u64,
    /// The table it was drained from, so a failed write can put it back; ignored by the merge. Null for a count
    /// drained from a sparse region.
    pub(crate) table: *mut PathTable,
    /// For a sparse region's count: the counter it was drained from (null for table counts).
    pub(crate) slot: *mut u64,
}

/// One module build to be written: the registered copies of it and their drained counters.
#[derive(Copy, Clone)]
pub(crate) struct Group<'a> {
    /// fnv1a64 of `meta`; groups are sorted by it and unique.
    pub(crate) meta_hash: u64,
    /// fnv1a64 of the module name.
    pub(crate) name_hash: u64,
    /// `RECORD_FLAG_*` this process contributes.
    pub(crate) flags: u64,
    /// The metadata blob.
    pub(crate) meta: &'a [u8],
    /// Counters per copy.
    pub(crate) num_counters: usize,
    /// `copies × num_counters` drained values, copy after copy.
    pub(crate) snap: &'a [u64],
    /// The copies' drained path counts, sorted by (function, path); equal keys (from several copies) may repeat.
    pub(crate) sparse: &'a [PathCount],
    /// 1 if this process has not been counted in the module's `runs` yet, else 0.
    pub(crate) runs_add: u64,
    /// Registration rank (0 = registered first): the order of appended records.
    pub(crate) order: usize,
}

impl Group<'_> {
    /// The summed drained value of counter `i` over all copies (modulo 2^64, see the module docs).
    fn count(&self, i: usize) -> u64 {
        let mut sum = 0u64;
        let mut at = i;
        while let Some(v) = self.snap.get(at) {
            sum = sum.wrapping_add(*v);
            at = match at.checked_add(self.num_counters.max(1)) {
                Some(n) => n,
                None => break,
            };
        }
        sum
    }
}

/// What happened to records during a merge, for diagnostics.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// A record of an older build of a registered module (same `name_hash`) was dropped.
    Stale {
        /// The dropped record's module name hash.
        name_hash: u64,
    },
    /// A record with a registered `meta_hash` but different sizes or metadata bytes was dropped.
    Mismatch {
        /// The record's meta hash.
        meta_hash: u64,
    },
}

/// Record counts of a merge, for the verbose summary.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    /// File records that received this process's counts.
    pub(crate) merged: u32,
    /// File records copied unchanged.
    pub(crate) kept: u32,
    /// File records dropped as stale.
    pub(crate) dropped: u32,
    /// Records appended for modules the file did not have.
    pub(crate) added: u32,
}

/// A validated profile's records.
#[derive(Clone)]
pub(crate) struct Existing<'a> {
    records: Records<'a>,
}

/// A cheap check of the 40 header bytes against the file size, before reading (and allocating) the rest: a
/// foreign file of any size is recognised without being read.
pub(crate) fn precheck(head: &[u8; FILE_HEADER_LEN], file_len: u64) -> Result<(), Invalid> {
    records::check_header(head, file_len).map(|_| ()).map_err(|e| e.reason())
}

/// Validates a whole profile with the checks `pathprof_format::records` shares with the reader (so a file the
/// CLI refuses is never merged into): the inner error says why the file is not a profile; the outer one is a
/// failed allocation (the file is then neither merged nor replaced). Never panics and never reads out of
/// bounds, whatever the bytes.
pub(crate) fn validate(file: &[u8]) -> Result<Result<Existing<'_>, Invalid>, Errno> {
    let records = match records::walk(file) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e.reason())),
    };
    let mut hashes: MVec<u64> = MVec::new();
    hashes.reserve(records.num_modules() as usize)?;
    for r in records.clone().flatten() {
        hashes.push(r.header.meta_hash)?;
    }
    crate::sys::sort_by_key(hashes.as_mut_slice(), |&h| h);
    if let Some(meta_hash) = records::repeated_module(hashes.as_slice()) {
        return Ok(Err(WireError::DuplicateModule { meta_hash }.reason()));
    }
    Ok(Ok(Existing { records }))
}

impl<'a> Existing<'a> {
    /// The records in file order.
    pub(crate) fn records(&self) -> impl Iterator<Item = Record<'a>> {
        self.records.clone().flatten()
    }
}

fn le64(b: &[u8], i: usize) -> u64 {
    match i.checked_mul(8).and_then(|at| b.get(at..)).and_then(|s| s.first_chunk::<8>()) {
        Some(c) => u64::from_le_bytes(*c),
        None => 0,
    }
}

/// Builds the new file image into `out`: the merge of `existing` (if any) with `groups` (sorted by
/// `meta_hash`, unique) under the rules in the module docs. `note` hears about every dropped record.
pub(crate) fn build(
    existing: Option<Existing<'_>>,
    groups: &[Group<'_>],
    out: &mut MVec<u8>,
    note: &mut dyn FnMut(Note),
) -> Result<Summary, Errno> {
    let mut sum = Summary::default();
    let mut merged: MVec<bool> = MVec::new();
    merged.extend_fill(false, groups.len())?;
    out.clear();
    out.extend_fill(0, FILE_HEADER_LEN)?;
    let mut num_modules: u32 = 0;

    for rec in existing.iter().flat_map(|e| e.records()) {
        let found = groups.binary_search_by_key(&rec.header.meta_hash, |g| g.meta_hash).ok();
        let slot = found.and_then(|i| Some((groups.get(i)?, merged.as_mut_slice().get_mut(i)?)));
        match slot {
            // A second record of the same build: `validate` refuses such files; were one to get here, it is kept
            // rather than added to twice.
            Some((_, done)) if *done => {
                out.extend_from_slice(rec.bytes)?;
                sum.kept += 1;
            }
            Some((g, done)) => {
                let same = rec.header.meta_len == g.meta.len() as u64
                    && rec.header.num_counters == g.num_counters as u64
                    && rec.meta == g.meta;
                if !same {
                    note(Note::Mismatch { meta_hash: rec.header.meta_hash });
                    sum.dropped += 1;
                    continue;
                }
                *done = true;
                put_record(out, g, &rec)?;
                sum.merged += 1;
            }
            None if groups.iter().any(|g| g.name_hash == rec.header.name_hash) => {
                note(Note::Stale { name_hash: rec.header.name_hash });
                sum.dropped += 1;
                continue;
            }
            None => {
                out.extend_from_slice(rec.bytes)?;
                sum.kept += 1;
            }
        }
        num_modules = num_modules.checked_add(1).ok_or(Errno(libc::EFBIG))?;
    }

    // New records, in registration order.
    let mut fresh: MVec<usize> = MVec::new();
    for (i, done) in merged.as_slice().iter().enumerate() {
        if !*done {
            fresh.push(i)?;
        }
    }
    crate::sys::sort_by_key(fresh.as_mut_slice(), |&i| groups.get(i).map_or(0, |g| g.order));
    for g in fresh.as_slice().iter().filter_map(|&i| groups.get(i)) {
        put_new_record(out, g)?;
        sum.added += 1;
        num_modules = num_modules.checked_add(1).ok_or(Errno(libc::EFBIG))?;
    }

    let payload = out.as_slice().get(FILE_HEADER_LEN..).unwrap_or(&[]);
    let header = FileHeader {
        version: FILE_VERSION,
        // Reserved: a file with other flags is not merged into (pathprof_format::records).
        flags: 0,
        num_modules,
        payload_len: payload.len() as u64,
        checksum: fnv1a64(payload),
    };
    if let Some(h) = out.as_mut_slice().first_chunk_mut::<FILE_HEADER_LEN>() {
        *h = header.encode();
    }
    Ok(sum)
}

/// A file record with this process's counts added.
fn put_record(out: &mut MVec<u8>, g: &Group<'_>, rec: &Record<'_>) -> Result<(), Errno> {
    let at = out.len();
    out.extend_from_slice(&[0; RECORD_HEADER_LEN])?;
    put_meta(out, g.meta)?;
    for i in 0..g.num_counters {
        out.extend_from_slice(&le64(rec.counters, i).wrapping_add(g.count(i)).to_le_bytes())?;
    }
    let num_sparse = put_sparse(out, rec.sparse, g.sparse)?;
    let h = RecordHeader {
        record_len: record_len(rec.header.meta_len, rec.header.num_counters, num_sparse).ok_or(Errno(libc::EFBIG))?,
        num_sparse,
        flags: rec.header.flags | g.flags,
        runs: rec.header.runs.saturating_add(g.runs_add),
        ..rec.header
    };
    set_header(out, at, &h);
    Ok(())
}

/// A record for a module the file does not have.
fn put_new_record(out: &mut MVec<u8>, g: &Group<'_>) -> Result<(), Errno> {
    let at = out.len();
    out.extend_from_slice(&[0; RECORD_HEADER_LEN])?;
    put_meta(out, g.meta)?;
    for i in 0..g.num_counters {
        out.extend_from_slice(&g.count(i).to_le_bytes())?;
    }
    let num_sparse = put_sparse(out, &[], g.sparse)?;
    let h = RecordHeader {
        record_len: record_len(g.meta.len() as u64, g.num_counters as u64, num_sparse).ok_or(Errno(libc::EFBIG))?,
        meta_hash: g.meta_hash,
        meta_len: g.meta.len() as u64,
        num_counters: g.num_counters as u64,
        num_sparse,
        flags: g.flags,
        // A record always stands for at least the run that wrote it.
        runs: g.runs_add.max(1),
        name_hash: g.name_hash,
    };
    set_header(out, at, &h);
    Ok(())
}

/// Writes `h` over the placeholder at `at`.
fn set_header(out: &mut MVec<u8>, at: usize, h: &RecordHeader) {
    let slot = out.as_mut_slice().get_mut(at..).and_then(|s| s.first_chunk_mut::<RECORD_HEADER_LEN>());
    if let Some(slot) = slot {
        *slot = h.encode();
    }
}

/// A sparse entry's sort key: (function, path) with the path as (high, low) words.
type SparseKey = (u64, u64, u64);

/// Writes the sum of the file's sparse entries (`file`, verbatim record bytes, in any order) and the drained
/// ones (`drained`, sorted): summed per key with wrapping addition, sorted by key, zero counts left out.
/// Returns the number of entries written.
fn put_sparse(out: &mut MVec<u8>, file: &[u8], drained: &[PathCount]) -> Result<u64, Errno> {
    let mut old: MVec<(SparseKey, u64)> = MVec::new();
    old.reserve(file.len() / SPARSE_ENTRY_LEN)?;
    for e in file.chunks_exact(SPARSE_ENTRY_LEN) {
        old.push(((le64(e, 0), le64(e, 2), le64(e, 1)), le64(e, 3)))?;
    }
    crate::sys::sort_by_key(old.as_mut_slice(), |e| e.0);
    let mut a = old.as_slice().iter().copied().peekable();
    let mut b = drained.iter().map(|p| ((p.function, 0, p.path), p.count)).peekable();
    let mut pending: Option<(SparseKey, u64)> = None;
    let mut written = 0u64;
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if y.0 < x.0 => b.next(),
            (Some(_), _) => a.next(),
            (None, _) => b.next(),
        };
        match (pending, next) {
            (Some((k, c)), Some((nk, nc))) if k == nk => pending = Some((k, c.wrapping_add(nc))),
            (done, next) => {
                if let Some(((function, hi, lo), count)) = done.filter(|e| e.1 != 0) {
                    for v in [function, lo, hi, count] {
                        out.extend_from_slice(&v.to_le_bytes())?;
                    }
                    written += 1;
                }
                if next.is_none() {
                    return Ok(written);
                }
                pending = next;
            }
        }
    }
}

fn put_meta(out: &mut MVec<u8>, meta: &[u8]) -> Result<(), Errno> {
    out.extend_from_slice(meta)?;
    let padded = pad8(meta.len() as u64).ok_or(Errno(libc::EFBIG))?;
    out.extend_fill(0, (padded - meta.len() as u64) as usize)
}

/// The `%m` signature of a set of modules: order-independent (a sum of per-module hashes), then mixed.
pub(crate) fn signature(meta_hashes: impl Iterator<Item = u64>) -> u64 {
    let sum = meta_hashes.fold(0u64, |acc, h| acc.wrapping_add(fnv1a64(&h.to_le_bytes())));
    fnv1a64_continue(fnv1a64(b"pathprof-signature"), &sum.to_le_bytes())
}

#[cfg(test)]
mod tests;
