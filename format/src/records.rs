//! The one walk over a `.pathprof` file's header and records (`no_std`, no allocation, never panics).
//!
//! The runtime (`rt/`, which merges into an existing file at exit) and the reader ([`crate::profile::read`],
//! behind the CLI) both frame a file with this walk, so they accept and refuse the same files: a file the CLI
//! refuses is never merged by the runtime (which warns and replaces it instead).
//!
//! What the walk checks, in order (the byte layout is [`crate::layout`]'s):
//! - file: magic, version, header `flags` and reserved word both zero (this version defines neither, so a
//!   nonzero value is a file written by something else), `payload_len` equals the bytes after the header, and
//!   the checksum ([`open`], or [`check_header`] alone, before the payload is read);
//! - per record ([`Records`]): a whole record header, `record_len` equal to [`record_len`] of its sizes and
//!   within the remaining bytes, zero metadata padding, and `meta_hash` the fnv1a64 of the metadata;
//! - after the last record: no bytes left over;
//! - then ([`repeated_module`]): no two records share a `meta_hash` (a writer merges such records). This needs
//!   one word per record, which the caller allocates and sorts (the walk itself allocates nothing).
//!
//! What needs the decoded metadata (its name hash, graphs, counter ranges, sparse function indices) is the
//! reader's alone; the runtime only merges records whose metadata bytes equal a registered module's.

use crate::layout::{
    fnv1a64, pad8, record_len, FileHeader, RecordHeader, FILE_HEADER_LEN, FILE_VERSION, MAGIC, RECORD_HEADER_LEN,
    SPARSE_ENTRY_LEN,
};

/// Why bytes are not a well-formed profile. Offsets are absolute byte offsets in the file; `record` counts
/// records from 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// No bytes at all.
    Empty,
    /// The magic bytes (as many as there are) are wrong: not a profile.
    BadMagic,
    /// The file header declares a version this code does not read.
    UnsupportedVersion {
        /// The version found.
        found: u32,
    },
    /// The file header's flags word is not zero.
    UnsupportedFlags(u32),
    /// The file header's reserved word is not zero.
    NonZeroReserved(u32),
    /// Fewer bytes than a header or record needs.
    Truncated {
        /// Where the missing piece starts.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are from `offset` on.
        available: u64,
    },
    /// More bytes follow the header than `payload_len` says.
    PayloadLenMismatch {
        /// `payload_len`.
        declared: u64,
        /// Bytes after the header.
        actual: u64,
    },
    /// The payload's fnv1a64 is not the stored checksum.
    ChecksumMismatch {
        /// Stored in the header.
        stored: u64,
        /// Of the payload.
        computed: u64,
    },
    /// A record's sizes overflow a `u64`.
    RecordSizeOverflow {
        /// The record.
        record: u32,
        /// Its offset.
        offset: u64,
    },
    /// A record's `record_len` is not the length its sizes give.
    RecordLenMismatch {
        /// The record.
        record: u32,
        /// Its offset.
        offset: u64,
        /// `record_len`.
        declared: u64,
        /// [`record_len`] of its sizes.
        expected: u64,
    },
    /// The padding after a record's metadata is not zero.
    NonZeroPadding {
        /// The record.
        record: u32,
    },
    /// A record's `meta_hash` is not the fnv1a64 of its metadata.
    MetaHashMismatch {
        /// The record.
        record: u32,
    },
    /// Two records have the same `meta_hash`.
    DuplicateModule {
        /// The shared hash.
        meta_hash: u64,
    },

    /// Bytes follow the last record.
    TrailingBytes {
        /// Bytes left over.
        count: u64,
        /// Records the header declares.
        num_modules: u32,
    },
}

impl WireError {
    /// A short fixed description, for the runtime's one-line warnings (which cannot format numbers freely).
    pub fn reason(&self) -> &'static str {
        match self {
            WireError::Empty => "empty file",
            WireError::BadMagic => "bad magic",
            WireError::UnsupportedVersion { .. } => "unsupported format version",
            WireError::UnsupportedFlags(_) => "unsupported header flags",
            WireError::NonZeroReserved(_) => "nonzero reserved header word",
            WireError::Truncated { offset: 0, .. } => "shorter than the file header",
            WireError::Truncated { offset, .. } if *offset == FILE_HEADER_LEN as u64 => {
                "length does not match the header (truncated?)"
            }
            WireError::Truncated { .. } => "record truncated",
            WireError::PayloadLenMismatch { .. } => "length does not match the header (truncated?)",
            WireError::ChecksumMismatch { .. } => "checksum mismatch",
            WireError::RecordSizeOverflow { .. } => "record sizes overflow",
            WireError::RecordLenMismatch { .. } => "record length inconsistent with its sizes",
            WireError::NonZeroPadding { .. } => "nonzero metadata padding",
            WireError::MetaHashMismatch { .. } => "metadata hash mismatch",
            WireError::DuplicateModule { .. } => "a module appears twice",
            WireError::TrailingBytes { .. } => "bytes after the last record",
        }
    }
}

/// Checks a file header against the file's length, before the payload is read: a foreign or truncated file
/// of any size is recognised from its first [`FILE_HEADER_LEN`] bytes.
pub fn check_header(head: &[u8; FILE_HEADER_LEN], file_len: u64) -> Result<FileHeader, WireError> {
    let h = FileHeader::decode(head).ok_or(WireError::BadMagic)?;
    if h.version != FILE_VERSION {
        return Err(WireError::UnsupportedVersion { found: h.version });
    }
    if h.flags != 0 {
        return Err(WireError::UnsupportedFlags(h.flags));
    }
    // FileHeader does not decode the reserved word at offset 20; it is part of the header all the same.
    let reserved = head.get(20..24).and_then(|b| b.first_chunk::<4>()).map_or(0, |b| u32::from_le_bytes(*b));
    if reserved != 0 {
        return Err(WireError::NonZeroReserved(reserved));
    }
    let actual = file_len.saturating_sub(FILE_HEADER_LEN as u64);
    if h.payload_len > actual {
        return Err(WireError::Truncated { offset: FILE_HEADER_LEN as u64, needed: h.payload_len, available: actual });
    }
    if h.payload_len != actual {
        return Err(WireError::PayloadLenMismatch { declared: h.payload_len, actual });
    }
    Ok(h)
}

/// Checks a whole file's header and checksum and returns its records, to be walked with [`Records`].
pub fn open(file: &[u8]) -> Result<Records<'_>, WireError> {
    if file.is_empty() {
        return Err(WireError::Empty);
    }
    // Only compare the magic bytes that are there, so a short text file is "bad magic", not "truncated".
    let have = file.len().min(MAGIC.len());
    if file.get(..have) != MAGIC.get(..have) {
        return Err(WireError::BadMagic);
    }
    let head = file.first_chunk::<FILE_HEADER_LEN>().ok_or(WireError::Truncated {
        offset: 0,
        needed: FILE_HEADER_LEN as u64,
        available: file.len() as u64,
    })?;
    let h = check_header(head, file.len() as u64)?;
    let payload = file.get(FILE_HEADER_LEN..).unwrap_or(&[]);
    let computed = fnv1a64(payload);
    if computed != h.checksum {
        return Err(WireError::ChecksumMismatch { stored: h.checksum, computed });
    }
    Ok(Records { payload, at: 0, next: 0, num_modules: h.num_modules })
}

/// [`open`]s a file and walks it to its end: its records, if every framing check passes. [`repeated_module`]
/// is the last check.
pub fn walk(file: &[u8]) -> Result<Records<'_>, WireError> {
    let records = open(file)?;
    for r in records.clone() {
        r?;
    }
    Ok(records)
}

/// One well-framed record, split into its sections.
#[derive(Copy, Clone, Debug)]
pub struct Record<'a> {
    /// The decoded header.
    pub header: RecordHeader,
    /// The whole record, header included.
    pub bytes: &'a [u8],
    /// Metadata (unpadded).
    pub meta: &'a [u8],
    /// Counters, `8 × num_counters` little-endian bytes.
    pub counters: &'a [u8],
    /// Sparse entries, `SPARSE_ENTRY_LEN × num_sparse` bytes, verbatim.
    pub sparse: &'a [u8],
    /// Absolute offset of the record in the file.
    pub offset: u64,
}

impl Record<'_> {
    /// Dense counter `i` (0 past the end).
    pub fn counter(&self, i: usize) -> u64 {
        le64_at(self.counters, i)
    }

    /// Sparse entry `i` as its four words (function, path_lo, path_hi, count); zeros past the end.
    pub fn sparse_entry(&self, i: usize) -> [u64; 4] {
        let base = i.saturating_mul(SPARSE_ENTRY_LEN / 8);
        [0, 1, 2, 3].map(|w| le64_at(self.sparse, base.saturating_add(w)))
    }
}

/// The records of an [`open`]ed file, in file order: each item is a record that passed the per-record checks,
/// or the first error (after which the walk ends). Past the declared records, leftover bytes are an error.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    payload: &'a [u8],
    /// Offset of the next record in `payload`, or `usize::MAX` once the walk has ended.
    at: usize,
    next: u32,
    num_modules: u32,
}

impl<'a> Records<'a> {
    /// Records the file header declares.
    pub fn num_modules(&self) -> u32 {
        self.num_modules
    }

    fn record(&self) -> Result<Record<'a>, WireError> {
        let record = self.next;
        let rest = self.payload.get(self.at..).unwrap_or(&[]);
        let offset = (FILE_HEADER_LEN as u64).saturating_add(self.at as u64);
        let available = rest.len() as u64;
        let head = rest.first_chunk::<RECORD_HEADER_LEN>().ok_or(WireError::Truncated {
            offset,
            needed: RECORD_HEADER_LEN as u64,
            available,
        })?;
        let h = RecordHeader::decode(head);
        let expected = record_len(h.meta_len, h.num_counters, h.num_sparse)
            .ok_or(WireError::RecordSizeOverflow { record, offset })?;
        if expected != h.record_len {
            return Err(WireError::RecordLenMismatch { record, offset, declared: h.record_len, expected });
        }
        let truncated = WireError::Truncated { offset, needed: h.record_len, available };
        let bytes = usize::try_from(h.record_len).ok().and_then(|n| rest.get(..n)).ok_or(truncated)?;
        // Every section lies inside `bytes`: their sizes sum to record_len (checked above).
        let overflow = WireError::RecordSizeOverflow { record, offset };
        let meta_end =
            usize::try_from(h.meta_len).ok().and_then(|n| n.checked_add(RECORD_HEADER_LEN)).ok_or(overflow)?;
        let padded = pad8(h.meta_len).and_then(|n| usize::try_from(n).ok()).ok_or(overflow)?;
        let counters_at = RECORD_HEADER_LEN.checked_add(padded).ok_or(overflow)?;
        let counters_len = usize::try_from(h.num_counters).ok().and_then(|n| n.checked_mul(8)).ok_or(overflow)?;
        let sparse_at = counters_at.checked_add(counters_len).ok_or(overflow)?;
        let meta = bytes.get(RECORD_HEADER_LEN..meta_end).ok_or(overflow)?;
        let padding = bytes.get(meta_end..counters_at).ok_or(overflow)?;
        if padding.iter().any(|&b| b != 0) {
            return Err(WireError::NonZeroPadding { record });
        }
        if fnv1a64(meta) != h.meta_hash {
            return Err(WireError::MetaHashMismatch { record });
        }
        Ok(Record {
            header: h,
            bytes,
            meta,
            counters: bytes.get(counters_at..sparse_at).ok_or(overflow)?,
            sparse: bytes.get(sparse_at..).ok_or(overflow)?,
            offset,
        })
    }
}

/// The last check of a [`walk`]ed file: a `meta_hash` that two records share (a writer merges such records),
/// given every record's `meta_hash` in `sorted`, in ascending order (sorting keeps the check O(n log n) on files
/// with many records). The caller collects and sorts the hashes once the walk has shown the records are there,
/// so a forged record count cannot make it allocate more than the file's size; the runtime sorts with its own
/// panic-free sort, as `core`'s slice sorts carry panic paths the runtime archive must not contain.
pub fn repeated_module(sorted: &[u64]) -> Option<u64> {
    sorted.windows(2).find(|w| w.first() == w.last()).and_then(|w| w.first().copied())
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at == usize::MAX {
            return None;
        }
        if self.next == self.num_modules {
            let left = self.payload.len().saturating_sub(self.at) as u64;
            self.at = usize::MAX;
            return (left != 0).then_some(Err(WireError::TrailingBytes { count: left, num_modules: self.num_modules }));
        }
        let r = self.record();
        match &r {
            Ok(rec) => {
                self.at = self.at.saturating_add(rec.bytes.len());
                self.next = self.next.saturating_add(1);
            }
            Err(_) => self.at = usize::MAX,
        }
        Some(r)
    }
}

fn le64_at(b: &[u8], i: usize) -> u64 {
    match i.checked_mul(8).and_then(|at| b.get(at..)).and_then(|s| s.first_chunk::<8>()) {
        Some(c) => u64::from_le_bytes(*c),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::RECORD_FLAG_INCOMPLETE;

    /// A file of records with the given metadata, counters and header flags/reserved word, checksum sealed.
    fn file(records: &[(&[u8], &[u64])], flags: u32, reserved: u32) -> std::vec::Vec<u8> {
        let mut payload = std::vec::Vec::new();
        for (meta, counters) in records {
            let h = RecordHeader {
                record_len: record_len(meta.len() as u64, counters.len() as u64, 0).unwrap(),
                meta_hash: fnv1a64(meta),
                meta_len: meta.len() as u64,
                num_counters: counters.len() as u64,
                num_sparse: 0,
                flags: RECORD_FLAG_INCOMPLETE,
                runs: 1,
                name_hash: 7,
            };
            payload.extend_from_slice(&h.encode());
            payload.extend_from_slice(meta);
            payload.resize(payload.len().next_multiple_of(8), 0);
            for c in *counters {
                payload.extend_from_slice(&c.to_le_bytes());
            }
        }
        let h = FileHeader {
            version: FILE_VERSION,
            flags,
            num_modules: records.len() as u32,
            payload_len: payload.len() as u64,
            checksum: fnv1a64(&payload),
        };
        let mut f = h.encode().to_vec();
        f[20..24].copy_from_slice(&reserved.to_le_bytes());
        f.extend_from_slice(&payload);
        f
    }

    /// The whole check: the walk, then the repeated-module check.
    fn validate(f: &[u8]) -> Result<Records<'_>, WireError> {
        let records = walk(f)?;
        let mut hashes: std::vec::Vec<u64> = records.clone().map(|r| r.unwrap().header.meta_hash).collect();
        hashes.sort_unstable();
        match repeated_module(&hashes) {
            Some(meta_hash) => Err(WireError::DuplicateModule { meta_hash }),
            None => Ok(records),
        }
    }

    fn reseal(f: &mut [u8]) {
        let ck = fnv1a64(&f[FILE_HEADER_LEN..]);
        f[32..40].copy_from_slice(&ck.to_le_bytes());
    }

    #[test]
    fn walks_records_and_splits_their_sections() {
        let f = file(&[(b"abc", &[1, 2]), (b"12345678", &[])], 0, 0);
        let recs: std::vec::Vec<_> = validate(&f).unwrap().map(Result::unwrap).collect();
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].meta, recs[0].counter(0), recs[0].counter(1), recs[0].counter(2)), (&b"abc"[..], 1, 2, 0));
        assert_eq!(recs[0].offset, 40);
        // 64 header + 8 (3 bytes of metadata padded) + 16 counters.
        assert_eq!((recs[1].offset, recs[1].meta, recs[1].counters.len()), (40 + 88, &b"12345678"[..], 0));
    }

    #[test]
    fn header_flags_and_reserved_word_are_refused() {
        assert_eq!(validate(&file(&[], 1, 0)).err(), Some(WireError::UnsupportedFlags(1)));
        assert_eq!(validate(&file(&[], 0, 5)).err(), Some(WireError::NonZeroReserved(5)));
        let reserved = file(&[], 0, 5);
        let head: &[u8; FILE_HEADER_LEN] = reserved[..40].try_into().unwrap();
        assert_eq!(check_header(head, 40).err(), Some(WireError::NonZeroReserved(5)));
    }

    #[test]
    fn padding_meta_hash_and_duplicates_are_refused() {
        let good = file(&[(b"abc", &[1])], 0, 0);
        let mut bad = good.clone();
        bad[40 + 64 + 5] = 1;
        reseal(&mut bad);
        assert_eq!(validate(&bad).err(), Some(WireError::NonZeroPadding { record: 0 }));
        let mut bad = good.clone();
        bad[40 + 64] = b'x';
        reseal(&mut bad);
        assert_eq!(validate(&bad).err(), Some(WireError::MetaHashMismatch { record: 0 }));
        let twice = file(&[(b"abc", &[1]), (b"d", &[]), (b"abc", &[2])], 0, 0);
        assert_eq!(validate(&twice).err(), Some(WireError::DuplicateModule { meta_hash: fnv1a64(b"abc") }));
    }

    #[test]
    fn every_truncation_and_extension_is_an_error() {
        // One record of 64 header + 8 (3 bytes of metadata, padded) + 16 counter bytes = 88 payload bytes.
        let f = file(&[(b"abc", &[1, 2])], 0, 0);
        for n in 0..f.len() {
            assert!(validate(&f[..n]).is_err(), "truncated to {n}");
        }
        let mut longer = f.clone();
        longer.push(0);
        assert_eq!(validate(&longer).err(), Some(WireError::PayloadLenMismatch { declared: 88, actual: 89 }));
        // A declared record count below the records there: leftover bytes, even with the checksum sealed.
        let mut fewer = f.clone();
        fewer[16..20].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(validate(&fewer).err(), Some(WireError::TrailingBytes { count: 88, num_modules: 0 }));
        let mut more = f;
        more[16..20].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(validate(&more).err(), Some(WireError::Truncated { offset: 128, needed: 64, available: 0 }));
    }
}
