//! Whole `.pathprof` files: reading untrusted bytes, writing, merging, and turning counters into counts.
//!
//! # Reading
//! [`read`] decodes the layout described in [`crate::layout`] from bytes that may be truncated, corrupt or not a
//! profile at all. It never panics, never loops longer than the input, and allocates at most a small multiple of
//! the input size: every length is checked against the bytes that are actually there before anything is read or
//! allocated (the order compiler-rt's `__llvm_profile_check_compatibility` gets wrong), every size computation is
//! checked arithmetic, and the file checksum is verified before any record is interpreted. The module denies the
//! clippy lints that would let a panic in (`indexing_slicing`, `unwrap_used`, `expect_used`, `panic`,
//! `arithmetic_side_effects`).
//!
//! Checks, in order: the framing checks of [`crate::records`], which the runtime applies before it merges
//! (length ≥ header, magic, version, header flags and reserved word, `payload_len` equals the bytes after the
//! header, checksum; then per record: header present, `record_len` equals [`layout::record_len`] of its sizes
//! and fits in the remaining bytes, metadata padding is zero, `meta_hash` is the fnv1a64 of the metadata); then
//! per record, what needs the metadata: `name_hash` the module's identity hash ([`ModuleMeta::name_hash`]), the metadata decodes, every function's
//! counters lie inside the record, the metadata validates, every function's `cfg_hash` matches its graph, every
//! sparse entry names a function of the module (with re-entry flags only in a module that records fork
//! re-entries); finally, no bytes follow the last record and no two records share a `meta_hash`.
//!
//! # Writing and merging
//! [`write()`] produces exactly the bytes the runtime writes (so `read(write(p)) == p`). [`merge`] adds the counts of
//! profiles of the same binary — with checked arithmetic in edge mode, with wrapping (two's complement) arithmetic
//! in path mode, whose counters are signed — and refuses profiles of different builds.
//!
//! Counts derived from a profile (edge and block counts, regenerated paths) are the `pathprof-analysis` crate's.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

mod merge;

pub use merge::{merge, MergeError};

use crate::layout::{self, FileHeader, RecordHeader, FILE_HEADER_LEN, FILE_VERSION};
use crate::meta::{MetaError, ModuleMeta};
use crate::records::{self, Record, WireError};
use pathprof_core::{Cfg, EdgeKind};

/// A whole profile: one record per instrumented module, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// The module records.
    pub modules: Vec<ModuleProfile>,
}

/// The counts of one instrumented module (one build of one translation unit).
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleProfile {
    /// The decoded metadata: functions, graphs, counter placement.
    pub meta: ModuleMeta,
    /// The metadata exactly as embedded in the binary; [`write()`] writes these bytes, not a re-encoding of `meta`.
    pub meta_bytes: Vec<u8>,
    /// fnv1a64 of `meta_bytes`: identifies the module build.
    pub meta_hash: u64,
    /// [`ModuleMeta::name_hash`] (module name and output): the same identity with another `meta_hash` is another
    /// build of the module.
    pub name_hash: u64,
    /// The dense counter array (per function: `counters[counter_base..counter_base + num_counters]`).
    pub counters: Vec<u64>,
    /// Path counts the runtime kept in hash tables.
    pub sparse: Vec<SparseEntry>,
    /// `layout::RECORD_FLAG_*`.
    pub flags: u64,
    /// Process runs summed into this record.
    pub runs: u64,
}

/// One path count held outside the dense counters, or a fork re-entry count (see [`SparseEntry::reentry`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SparseEntry {
    /// Index of the function in the module metadata's function list, with the re-entry flags
    /// (`layout::SPARSE_REENTRY`, `layout::SPARSE_REENTRY_BLOCK`) for re-entry counts.
    pub function: u64,
    /// Ball–Larus path number.
    pub path: u128,
    /// How often the path ran.
    pub count: u64,
}

impl SparseEntry {
    /// The function index without the re-entry flags.
    pub fn function_index(&self) -> u64 {
        self.function & layout::SPARSE_FUNCTION_MASK
    }

    /// What a re-entry entry counts re-entries of; `None` for a path count.
    pub fn reentry(&self) -> Option<Reentered> {
        if self.function & layout::SPARSE_REENTRY == 0 {
            None
        } else if self.function & layout::SPARSE_REENTRY_BLOCK != 0 {
            Some(Reentered::Block(self.path))
        } else {
            Some(Reentered::Path(self.path))
        }
    }
}

/// What a fork re-entry entry names.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reentered {
    /// A truncated path (its number), counted on arrival at the block of the call that was in flight.
    Path(u128),
    /// A block (its index) of the function.
    Block(u128),
}

/// A module's fork re-entries, summed per key (see `layout::SPARSE_REENTRY`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForkReentries {
    /// (function index, truncated path number) → re-entries; in context and piecewise modes the path number is
    /// module-wide and the function is the one whose block counted it.
    pub paths: std::collections::BTreeMap<(u64, u128), u64>,
    /// (function index, block) → re-entries.
    pub blocks: std::collections::BTreeMap<(u64, u128), u64>,
}

impl ForkReentries {
    /// Whether function `f` was re-entered at all.
    pub fn touches(&self, f: u64) -> bool {
        let any = |m: &std::collections::BTreeMap<(u64, u128), u64>| m.range((f, 0)..=(f, u128::MAX)).next().is_some();
        any(&self.paths) || any(&self.blocks)
    }
}

impl ModuleProfile {
    /// The sparse entries that are path counts (fork re-entry entries left out).
    pub fn path_entries(&self) -> impl Iterator<Item = &SparseEntry> + Clone {
        self.sparse.iter().filter(|s| s.reentry().is_none())
    }

    /// The module's fork re-entries, summed per key (wrapping, like the counts they come from: a sum is only
    /// out of range in a corrupt profile, where it shows up as inconsistent counts).
    pub fn fork_reentries(&self) -> ForkReentries {
        let mut out = ForkReentries::default();
        for s in &self.sparse {
            let (map, key) = match s.reentry() {
                Some(Reentered::Path(t)) => (&mut out.paths, t),
                Some(Reentered::Block(b)) => (&mut out.blocks, b),
                None => continue,
            };
            let slot = map.entry((s.function_index(), key)).or_insert(0);
            *slot = slot.wrapping_add(s.count);
        }
        out.paths.retain(|_, c| *c != 0);
        out.blocks.retain(|_, c| *c != 0);
        out
    }

    /// Builds a record for `meta` with consistent derived fields: encodes the metadata and computes both hashes.
    pub fn new(meta: ModuleMeta, counters: Vec<u64>, sparse: Vec<SparseEntry>, flags: u64, runs: u64) -> Self {
        let meta_bytes = meta.encode();
        ModuleProfile {
            meta_hash: layout::fnv1a64(&meta_bytes),
            name_hash: meta.name_hash(),
            meta,
            meta_bytes,
            counters,
            sparse,
            flags,
            runs,
        }
    }

    /// The name used in messages: the module name from the metadata.
    pub fn name(&self) -> &str {
        &self.meta.module_name
    }
}

/// Why bytes are not a readable profile. Every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The input has no bytes at all.
    #[error("empty file: not a pathprof profile")]
    Empty,
    /// The input does not start with [`layout::MAGIC`].
    #[error("not a pathprof profile (bad magic)")]
    BadMagic,
    /// A section extends past the end of the input.
    #[error("truncated profile: expected {needed} bytes at offset {offset}, found {available}")]
    Truncated {
        /// Where the section starts.
        offset: u64,
        /// Bytes the section needs.
        needed: u64,
        /// Bytes actually there.
        available: u64,
    },
    /// A format version this reader does not understand.
    #[error("unsupported profile version {found} (this pathprof reads version {FILE_VERSION})")]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
    },
    /// Header flags are reserved and must be zero in this version.
    #[error("unsupported profile header flags {0:#x} (this pathprof reads version {FILE_VERSION}, which has none)")]
    UnsupportedFlags(u32),
    /// The header's reserved word is not zero.
    #[error("corrupt profile header: reserved word is {0:#x}, expected 0")]
    NonZeroReserved(u32),
    /// More bytes follow the header than it declares.
    #[error("profile length mismatch: the header declares {declared} payload bytes but {actual} follow it")]
    PayloadLenMismatch {
        /// `payload_len` from the header.
        declared: u64,
        /// Bytes after the header.
        actual: u64,
    },
    /// The payload does not hash to the header's checksum.
    #[error("checksum mismatch: the profile is corrupt")]
    ChecksumMismatch {
        /// Checksum in the header.
        stored: u64,
        /// fnv1a64 of the payload.
        computed: u64,
    },
    /// A record's sizes do not add up to its declared length.
    #[error(
        "corrupt profile: record {record} at offset {offset} declares {declared} bytes, its sizes need {expected}"
    )]
    RecordLenMismatch {
        /// Record index (0-based).
        record: u32,
        /// Offset of the record in the file.
        offset: u64,
        /// `record_len` from its header.
        declared: u64,
        /// [`layout::record_len`] of its sizes.
        expected: u64,
    },
    /// A record's sizes overflow 64 bits.
    #[error("corrupt profile: record {record} at offset {offset} has impossibly large sizes")]
    RecordSizeOverflow {
        /// Record index (0-based).
        record: u32,
        /// Offset of the record in the file.
        offset: u64,
    },
    /// The padding after the metadata is not zero.
    #[error("corrupt profile: record {record} has nonzero padding after its metadata")]
    NonZeroPadding {
        /// Record index (0-based).
        record: u32,
    },
    /// The metadata bytes do not hash to the record's `meta_hash`.
    #[error("corrupt profile: record {record} metadata does not match its hash")]
    MetaHashMismatch {
        /// Record index (0-based).
        record: u32,
    },
    /// The metadata cannot be decoded or is inconsistent.
    #[error("corrupt profile: record {record}: {error}")]
    Meta {
        /// Record index (0-based).
        record: u32,
        /// What is wrong with the metadata.
        error: MetaError,
    },
    /// The record's `name_hash` is not the identity hash of its module name and output.
    #[error("corrupt profile: module {module} has a name hash that does not match its name and output")]
    NameHashMismatch {
        /// Module name.
        module: String,
    },
    /// A function's counters extend past the record's counter array.
    #[error(
        "corrupt profile: function {function} of module {module} uses {count} counters from index {base}, \
         but the module has {available}"
    )]
    CounterRange {
        /// Module name.
        module: String,
        /// Function (linkage) name.
        function: String,
        /// `counter_base`.
        base: u64,
        /// `num_counters`.
        count: u32,
        /// Counters in the record.
        available: u64,
    },
    /// A function's `cfg_hash` is not [`cfg_hash`] of its graph.
    #[error("corrupt profile: function {function} of module {module} has a CFG hash that does not match its graph")]
    CfgHashMismatch {
        /// Module name.
        module: String,
        /// Function (linkage) name.
        function: String,
    },
    /// A sparse entry names a function the module does not have.
    #[error("corrupt profile: module {module} has a path count for function #{function}, but only {num_functions} functions")]
    SparseFunctionOutOfRange {
        /// Module name.
        module: String,
        /// The function index in the entry.
        function: u64,
        /// Functions in the metadata.
        num_functions: usize,
    },
    /// A module whose metadata says it records no fork re-entries has re-entry entries.
    #[error("corrupt profile: module {module} has fork re-entry counts but was not built to record them")]
    UnexpectedReentries {
        /// Module name.
        module: String,
    },
    /// Two records have the same `meta_hash`; a writer merges such records.
    #[error("corrupt profile: module {module} appears twice")]
    DuplicateModule {
        /// Module name.
        module: String,
    },
    /// Bytes follow the last record.
    #[error("corrupt profile: {count} bytes follow the last of {num_modules} module records")]
    TrailingBytes {
        /// Bytes left over.
        count: u64,
        /// Records the header declares.
        num_modules: u32,
    },
}

fn u64_le(chunk: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    for (d, s) in a.iter_mut().zip(chunk) {
        *d = *s;
    }
    u64::from_le_bytes(a)
}

/// Decodes a profile from untrusted bytes; see the module docs for the checks. Never panics.
pub fn read(bytes: &[u8]) -> Result<Profile, ProfileError> {
    let mut modules: Vec<ModuleProfile> = Vec::new();
    let records = records::open(bytes).map_err(|e| wire_error(e, &[]))?;
    for (record, framed) in (0u32..).zip(records.clone()) {
        let framed = framed.map_err(|e| wire_error(e, &modules))?;
        modules.push(read_record(&framed, record)?);
    }
    let mut hashes: Vec<u64> = modules.iter().map(|m| m.meta_hash).collect();
    hashes.sort_unstable();
    if let Some(meta_hash) = records::repeated_module(&hashes) {
        return Err(wire_error(WireError::DuplicateModule { meta_hash }, &modules));
    }
    Ok(Profile { modules })
}

/// The reader's error for a framing error of [`records`]; `modules` are the records read so far (to name the
/// module a duplicate repeats).
fn wire_error(e: WireError, modules: &[ModuleProfile]) -> ProfileError {
    match e {
        WireError::Empty => ProfileError::Empty,
        WireError::BadMagic => ProfileError::BadMagic,
        WireError::UnsupportedVersion { found } => ProfileError::UnsupportedVersion { found },
        WireError::UnsupportedFlags(flags) => ProfileError::UnsupportedFlags(flags),
        WireError::NonZeroReserved(word) => ProfileError::NonZeroReserved(word),
        WireError::Truncated { offset, needed, available } => ProfileError::Truncated { offset, needed, available },
        WireError::PayloadLenMismatch { declared, actual } => ProfileError::PayloadLenMismatch { declared, actual },
        WireError::ChecksumMismatch { stored, computed } => ProfileError::ChecksumMismatch { stored, computed },
        WireError::RecordSizeOverflow { record, offset } => ProfileError::RecordSizeOverflow { record, offset },
        WireError::RecordLenMismatch { record, offset, declared, expected } => {
            ProfileError::RecordLenMismatch { record, offset, declared, expected }
        }
        WireError::NonZeroPadding { record } => ProfileError::NonZeroPadding { record },
        WireError::MetaHashMismatch { record } => ProfileError::MetaHashMismatch { record },
        WireError::DuplicateModule { meta_hash } => ProfileError::DuplicateModule {
            module: modules
                .iter()
                .find(|m| m.meta_hash == meta_hash)
                .map_or_else(|| format!("{meta_hash:#x}"), |m| m.meta.label()),
        },
        WireError::TrailingBytes { count, num_modules } => ProfileError::TrailingBytes { count, num_modules },
    }
}

/// Decodes one record that [`records`] framed: its counters, sparse entries and metadata, with the checks
/// that need the decoded metadata.
fn read_record(framed: &Record<'_>, record: u32) -> Result<ModuleProfile, ProfileError> {
    let h = framed.header;
    // Every size below was bounded by record_len, which fits in the input: allocations are input-bounded.
    let meta_bytes = framed.meta;
    let counters: Vec<u64> = framed.counters.chunks_exact(8).map(u64_le).collect();
    let sparse: Vec<SparseEntry> = framed
        .sparse
        .chunks_exact(layout::SPARSE_ENTRY_LEN)
        .map(|e| {
            let word = |i: usize| e.get(i..).map_or(0, u64_le);
            SparseEntry { function: word(0), path: u128::from(word(8)) | (u128::from(word(16)) << 64), count: word(24) }
        })
        .collect();

    let meta = decode_meta(meta_bytes, counters.len() as u64, record)?;
    let module = || meta.label();
    if meta.name_hash() != h.name_hash {
        return Err(ProfileError::NameHashMismatch { module: module() });
    }
    for f in &meta.functions {
        if cfg_hash(&f.cfg) != f.cfg_hash {
            return Err(ProfileError::CfgHashMismatch { module: module(), function: f.name.clone() });
        }
    }
    let num_functions = meta.functions.len();
    if let Some(bad) = sparse.iter().find(|s| {
        !matches!(usize::try_from(s.function_index()), Ok(i) if i < num_functions)
            || (s.reentry().is_none() && s.function != s.function_index())
    }) {
        return Err(ProfileError::SparseFunctionOutOfRange { module: module(), function: bad.function, num_functions });
    }
    if !meta.fork_reentries && sparse.iter().any(|s| s.reentry().is_some()) {
        return Err(ProfileError::UnexpectedReentries { module: module() });
    }
    Ok(ModuleProfile {
        meta,
        meta_bytes: meta_bytes.to_vec(),
        meta_hash: h.meta_hash,
        name_hash: h.name_hash,
        counters,
        sparse,
        flags: h.flags,
        runs: h.runs,
    })
}

/// [`ModuleMeta::decode`], with the record's counter ranges checked between decoding and
/// [`ModuleMeta::validate`]: `validate` allocates a table of `num_counters` entries per function, and in path
/// mode nothing but the record's own counter array bounds that number, so it must be checked first to keep
/// allocation proportional to the input. The blob encoding is that of [`crate::meta`] (magic, version,
/// postcard); errors are the same [`MetaError`]s `decode` returns.
fn decode_meta(bytes: &[u8], available: u64, record: u32) -> Result<ModuleMeta, ProfileError> {
    let err = |error| ProfileError::Meta { record, error };
    let meta = ModuleMeta::decode_unvalidated(bytes).map_err(err)?;
    for f in &meta.functions {
        let end = f.counter_base.checked_add(u64::from(f.num_counters));
        if !matches!(end, Some(end) if end <= available) {
            return Err(ProfileError::CounterRange {
                module: meta.module_name.clone(),
                function: f.name.clone(),
                base: f.counter_base,
                count: f.num_counters,
                available,
            });
        }
    }
    meta.validate().map_err(err)?;
    Ok(meta)
}

/// Encodes a profile exactly as the runtime writes it: file header, records in order (header, metadata bytes
/// zero-padded to 8, counters, sparse entries), checksum over everything after the header.
///
/// The record header fields are taken from the record (`meta_hash`, `name_hash`, `flags`, `runs`) and from the
/// lengths of its vectors; `meta_bytes` is written as is. A profile returned by [`read`] or [`merge`], or built
/// with [`ModuleProfile::new`], is consistent, and then `read(&write(p)) == Ok(p)`.
///
/// # Panics
/// Only if the profile has more than `u32::MAX` modules, which would need hundreds of gigabytes of memory.
pub fn write(p: &Profile) -> Vec<u8> {
    // One profile in memory: these sizes are bounded by memory, so plain arithmetic cannot overflow u64.
    #![allow(clippy::arithmetic_side_effects)]
    let mut payload = Vec::new();
    for m in &p.modules {
        let meta_len = m.meta_bytes.len() as u64;
        let num_counters = m.counters.len() as u64;
        let num_sparse = m.sparse.len() as u64;
        let record_len = layout::record_len(meta_len, num_counters, num_sparse).unwrap_or(u64::MAX);
        let h = RecordHeader {
            record_len,
            meta_hash: m.meta_hash,
            meta_len,
            num_counters,
            num_sparse,
            flags: m.flags,
            runs: m.runs,
            name_hash: m.name_hash,
        };
        payload.extend_from_slice(&h.encode());
        payload.extend_from_slice(&m.meta_bytes);
        let pad = (8 - m.meta_bytes.len() % 8) % 8;
        payload.resize(payload.len() + pad, 0);
        for c in &m.counters {
            payload.extend_from_slice(&c.to_le_bytes());
        }
        for s in &m.sparse {
            payload.extend_from_slice(&s.function.to_le_bytes());
            payload.extend_from_slice(&(s.path as u64).to_le_bytes());
            payload.extend_from_slice(&((s.path >> 64) as u64).to_le_bytes());
            payload.extend_from_slice(&s.count.to_le_bytes());
        }
    }
    #[allow(clippy::expect_used)]
    let num_modules = u32::try_from(p.modules.len()).expect("more than u32::MAX modules in one profile");
    let header = FileHeader {
        version: FILE_VERSION,
        flags: 0,
        num_modules,
        payload_len: payload.len() as u64,
        checksum: layout::fnv1a64(&payload),
    };
    let mut out = Vec::with_capacity(FILE_HEADER_LEN + payload.len());
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(&payload);
    out
}

/// Structural fingerprint of a CFG, stored in `FunctionMeta::cfg_hash` by the pass and checked by [`read`];
/// matches the same code across builds (PGO use), like LLVM's `computeCFGHash`.
///
/// fnv1a64 over a fixed-width little-endian encoding: `num_blocks` as `u32`, then per edge in `EdgeId` order
/// `from: u32`, `to: u32`, a kind tag `u8` (0 Branch, 1 Return, 2 Termination, 3 ExitToEntry) and `succ: u32`
/// (0 for non-branch edges). Changing this encoding invalidates every stored profile: bump the format version.
pub fn cfg_hash(cfg: &Cfg) -> u64 {
    let mut h = layout::FNV_OFFSET;
    h = layout::fnv1a64_continue(h, &(cfg.num_blocks() as u32).to_le_bytes());
    for e in cfg.edges() {
        let (tag, succ) = match e.kind {
            EdgeKind::Branch { succ } => (0u8, succ),
            EdgeKind::Return => (1, 0),
            EdgeKind::Termination => (2, 0),
            EdgeKind::ExitToEntry => (3, 0),
        };
        h = layout::fnv1a64_continue(h, &e.from.0.to_le_bytes());
        h = layout::fnv1a64_continue(h, &e.to.0.to_le_bytes());
        h = layout::fnv1a64_continue(h, &[tag]);
        h = layout::fnv1a64_continue(h, &succ.to_le_bytes());
    }
    h
}
