//! Byte layout of the `.pathprof` file and of the per-module descriptor the pass emits for the runtime.
//!
//! This module is `no_std` and allocation-free: the runtime (`rt/`) writes and merges files with it, the pass
//! emits descriptors matching [`ModuleDesc`], and the reader in [`crate::profile::read`] decodes the same layout. Any change
//! here bumps [`FILE_VERSION`] (file) or [`DESC_VERSION`] (descriptor).
//!
//! # File layout (all integers little-endian, every section 8-byte aligned)
//! ```text
//! FileHeader   (FILE_HEADER_LEN = 40 bytes)
//!   0  magic        [u8; 8] = MAGIC
//!   8  version      u32     = FILE_VERSION
//!   12 flags        u32     (reserved, 0)
//!   16 num_modules  u32
//!   20 reserved     u32     (0)
//!   24 payload_len  u64     bytes after the header (sum of all record_len)
//!   32 checksum     u64     fnv1a64 of the payload
//! ModuleRecord × num_modules, each:
//!   RecordHeader (RECORD_HEADER_LEN = 64 bytes)
//!     0  record_len    u64  whole record including this header
//!     8  meta_hash     u64  fnv1a64 of the metadata bytes: identifies the module build
//!     16 meta_len      u64
//!     24 num_counters  u64
//!     32 num_sparse    u64  number of SparseEntry (path counts held in runtime hash tables)
//!     40 flags         u64  RECORD_FLAG_*
//!     48 runs          u64  process runs summed into this record
//!     56 name_hash     u64  module_identity_hash of the module name and output: same identity + other
//!                           meta_hash = a stale build
//!   meta bytes (meta_len), zero-padded to a multiple of 8
//!   counters: u64 × num_counters
//!   sparse entries: SparseEntry × num_sparse (SPARSE_ENTRY_LEN = 32 bytes each):
//!     0 function u64 (index into the metadata's function list), 8 path_lo u64, 16 path_hi u64, 24 count u64
//!     (with SPARSE_REENTRY set in `function`: fork re-entries of the path or, with SPARSE_REENTRY_BLOCK,
//!     of the block `path_lo`, of function `function & SPARSE_FUNCTION_MASK`)
//! ```

/// File magic: high byte 0xFF and a final byte that is invalid UTF-8, so text files never look like profiles.
pub const MAGIC: [u8; 8] = [0xFF, b'p', b'a', b't', b'h', b'p', b'r', 0x81];
/// Current file format version; readers refuse any other.
pub const FILE_VERSION: u32 = 1;
/// Bytes in the file header.
pub const FILE_HEADER_LEN: usize = 40;
/// Bytes in a module record header.
pub const RECORD_HEADER_LEN: usize = 64;
/// Bytes in one sparse (hash-table) path count entry.
pub const SPARSE_ENTRY_LEN: usize = 32;

/// Record flag: at least one run ended in a way the profile cannot vouch for (for example a fatal signal with
/// the opt-in flush): counts are a lower bound, not exact.
pub const RECORD_FLAG_INCOMPLETE: u64 = 1 << 0;
/// Record flag: the counters were updated non-atomically by more than one thread, so increments may be lost.
pub const RECORD_FLAG_THREADED_NONATOMIC: u64 = 1 << 1;
/// Record flag: a signal handler did not return (it called `longjmp` or `exit`), leaving the activations it
/// interrupted in the middle of a block, where no counter accounts for them. Readers without this flag see an
/// unknown flag, which flags the counts too.
pub const RECORD_FLAG_HANDLER_ESCAPED: u64 = 1 << 2;
/// Record flag: the process ended (`exit`, `_exit`, `exec`) while another thread was running, so an activation
/// it had in the middle of a block may be missing from the flow, where no counter accounts for it (a thread
/// waiting inside a call is accounted for: the call has a termination edge). Readers without this flag see an
/// unknown flag, which flags the counts too.
pub const RECORD_FLAG_THREADS_IN_FLIGHT: u64 = 1 << 3;
/// Record flag: the runtime dropped path updates — a path table held as many paths as it may
/// (`PATHPROF_TABLE_CAP_LOG2`), memory could not be mapped, or a signal handler's update found the table busy —
/// so counts are a lower bound. Until 2026-12-03 such records were flagged [`RECORD_FLAG_INCOMPLETE`], which
/// readers reported as a run that ended abnormally. Readers without this flag see an unknown flag, which flags
/// the counts too.
pub const RECORD_FLAG_DROPPED: u64 = 1 << 4;

/// Sparse entry `function` flag: the entry counts *fork re-entries* — activations that a `fork()`ed child
/// resumed after a call that was in flight at the fork (its counters started at zero, so they were never
/// entered there) — not path executions. Its `path` is the number of the truncated path counted on arrival at
/// the call's block (path, context and piecewise modes), or, with [`SPARSE_REENTRY_BLOCK`], the block itself.
/// The instrumented code passes `function` with these flags to `__pathprof_fork_reentry`; merges sum such
/// entries like any other. Only metadata version 5 and later modules have them.
pub const SPARSE_REENTRY: u64 = 1 << 63;
/// With [`SPARSE_REENTRY`]: the entry's `path` is a block index (edge mode, and the interprocedural modes'
/// call blocks), not a path number.
pub const SPARSE_REENTRY_BLOCK: u64 = 1 << 62;
/// The function index of a sparse entry's `function` field, without the re-entry flags.
pub const SPARSE_FUNCTION_MASK: u64 = SPARSE_REENTRY_BLOCK - 1;

/// What instrumented code passes to `__pathprof_fork_reentry` to name a re-entry's function and kind:
/// `function × 2 + 1` for a block re-entry, `function × 2` for a truncated path's. A small number, so that the
/// constant costs an immediate operand on the cold path rather than a 64-bit constant (which LLVM hoists into a
/// register for a whole loop). Values with the top bit set name nothing (the runtime ignores them).
pub const fn reentry_packed(function: u64, block: bool) -> u64 {
    (function << 1) | block as u64
}

/// The sparse entry `function` word of a [`reentry_packed`] value; `None` for a value that names nothing.
pub const fn reentry_word(packed: u64) -> Option<u64> {
    if packed >> 63 != 0 {
        return None;
    }
    let flags = if packed & 1 != 0 { SPARSE_REENTRY | SPARSE_REENTRY_BLOCK } else { SPARSE_REENTRY };
    Some(flags | (packed >> 1))
}

/// Version of [`ModuleDesc`]; the runtime ignores (with a warning) descriptors of another version.
pub const DESC_VERSION: u32 = 6;
/// Descriptor flag: counters are updated with atomic read-modify-write.
pub const DESC_FLAG_ATOMIC: u32 = 1 << 0;
/// Descriptor flag owned by the runtime (the pass emits it clear): the descriptor is on the runtime's list. A
/// second registration while it is — a constructor run again — is ignored instead of linking the list into a
/// cycle (found by a function the optimiser emptied, which ran on into the module constructor).
pub const DESC_FLAG_REGISTERED: u32 = 1 << 31;

/// Per-module registration record. The pass emits one as a mutable global and passes its address to
/// `__pathprof_register_module` from a constructor; the runtime links descriptors through `next` without
/// allocating. Field order and types are the contract with the pass (LLVM type
/// `{ i32, i32, ptr, i64, i64, i64, ptr, i64, ptr, ptr, i64, ptr, i64, ptr }`).
#[repr(C)]
pub struct ModuleDesc {
    /// Must equal [`DESC_VERSION`].
    pub version: u32,
    /// `DESC_FLAG_*`.
    pub flags: u32,
    /// Metadata bytes (a [`crate`] metadata blob), copied verbatim into the profile.
    pub meta: *const u8,
    /// Length of `meta`.
    pub meta_len: u64,
    /// fnv1a64 of the metadata, computed at compile time.
    pub meta_hash: u64,
    /// fnv1a64 of the module name (see [`RecordHeader::name_hash`]).
    pub name_hash: u64,
    /// The module's dense counter array.
    pub counters: *mut u64,
    /// Number of dense counters.
    pub num_counters: u64,
    /// Runtime-owned link in the list of registered modules (null when emitted).
    pub next: *mut ModuleDesc,
    /// Path-mode hash tables of this module (functions whose path space is too large for a dense array).
    pub tables: *mut PathTable,
    /// Number of entries in `tables`.
    pub num_tables: u64,
    /// Path-mode sparse regions of this module (functions whose path space is too large for the dense array
    /// but small enough for a lazily committed one of their own).
    pub regions: *mut SparseRegion,
    /// Number of entries in `regions`.
    pub num_regions: u64,
    /// Context and piecewise modes: swaps the calling thread's caller/callee hand-over of this module with the
    /// three words at its argument (null in the other modes). The runtime's signal trampoline calls it before
    /// and after a program's handler, so that instrumented code the handler runs cannot overwrite a hand-over
    /// the interrupted code has written and not read yet.
    pub ip_swap: Option<unsafe extern "C" fn(*mut u64)>,
}

/// One function's own zero-initialised counter array, indexed by path number like a dense array but too large
/// to write whole. The runtime maps it (anonymous, private, not reserved) when the module registers, so only the
/// pages of executed paths are ever committed, and writes its nonzero counts as sparse entries (finding the
/// touched pages with `mincore`). It is not in the image's `.bss` (before descriptor version 6 it was): a
/// conservative garbage collector scans every writable segment of the image as roots, and megabytes of counters
/// there made the Boehm collector's every collection slower and its pacing different (libgc's own test_cpp
/// failed). Instrumented code reads the array's address from `cell` at function entry, and asks the runtime
/// for it (`__pathprof_region_counters`) when it runs before registration. LLVM type `{ i64, ptr, i64 }`.
#[repr(C)]
pub struct SparseRegion {
    /// The function's index in the module metadata (the `function` of the sparse entries it produces).
    pub function: u64,
    /// The module's word holding the counters' address: null until the runtime maps them.
    pub cell: *mut *mut u64,
    /// Number of counters (the function's number of paths).
    pub len: u64,
}

/// One function's runtime hash table of path counts, keyed by path number. The pass emits it zeroed except
/// `function` and the cache fields; the runtime allocates the slots on first use and grows them off the counting
/// fast path. Instrumented code updates it through its cache (see [`PathTable::cache`]) or, without one, calls
/// `__pathprof_path_add(table, path, delta)` (`delta` is +1 for a path that ends, or 0 for a PHI entry of an
/// edge that ends none; a wider `delta` only ever comes from the runtime moving a cached count). LLVM type
/// `{ i64, i64, ptr, i64, i64, ptr, i64 }`.
#[repr(C)]
pub struct PathTable {
    /// The function's index in the module metadata (the `function` of the sparse entries it produces).
    pub function: u64,
    /// Runtime-owned spin lock word, taken for every update (hashed functions are rare and cold-ish, and the
    /// lock makes concurrent updates exact): bits 0–60 the owner (0 = free), bits 61–63 runtime flags (table
    /// full, warned, a path was dropped). The pass emits 0.
    pub lock: u64,
    /// Runtime-owned slot array: `capacity` pairs of (path + 1, count), path + 1 == 0 marking an empty slot.
    pub slots: *mut u64,
    /// Number of slot pairs.
    pub capacity: u64,
    /// Occupied slots.
    pub len: u64,
    /// Non-atomic builds: a direct-mapped cache in front of the table, emitted zeroed: `cache_len` (a power of
    /// two) path words followed by `cache_len` count words, so that the count of path word `i` is a constant
    /// offset from it. Instrumented code adds to count `i = path_cache_slot(path, cache_len)` when path word `i`
    /// holds the path, and otherwise calls `__pathprof_path_cache_miss(table, path, delta)`, which moves that
    /// pair's count into the table and installs the path. A zeroed pair is path 0 with count 0, so no word is
    /// reserved for "empty". A hit is a few inline instructions on a small, hot array: no call and no probe of
    /// a large table. Dumps, resets and forks treat the cached counts as part of the table. Like a non-atomic
    /// dense counter, a pair is updated with a plain load and store: concurrent threads (flagged
    /// `RECORD_FLAG_THREADED_NONATOMIC`) or a signal handler that updates the same pair in the middle of an
    /// update can lose a count.
    ///
    /// Atomic builds use the same layout with *sticky* pairs: a path word holds path + 1 (0: empty), an update
    /// that finds its path's word adds to the count word with an atomic add, and otherwise calls
    /// `__pathprof_path_cache_claim(table, path, delta)`, which gives an empty pair to the path for good (a
    /// compare-and-swap) or updates the table. A pair never changes hands, so no update can land on another
    /// path's count and none needs a lock; dumps swap the counts to 0. The price: a path that comes second to a
    /// pair pays the call every time. Null (and `cache_len` 0) when the build asked for no cache.
    pub cache: *mut u64,
    /// Path words (and count words) in `cache`: 0 or a power of two.
    pub cache_len: u64,
}

/// Multiplier of [`path_slot_hash`] and [`path_cache_slot`]: 2^64 divided by the golden ratio (Fibonacci
/// hashing).
pub const PATH_HASH_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// Where a key (path + 1) goes in a path table, before masking: the key's high half folded into
/// its low half, times [`PATH_HASH_MULTIPLIER`], bits 32.. of the product. One multiplication, because the
/// pass emits it inline on the counting fast path; bits 32..54 depend on every key bit, which covers every
/// table size (at most 2^23 pairs).
#[inline]
pub const fn path_slot_hash(key: u64) -> u64 {
    (key ^ (key >> 32)).wrapping_mul(PATH_HASH_MULTIPLIER) >> 32
}

/// Right shift of [`path_cache_slot`] for a cache of `len` pairs (a power of two): the product's top
/// log2(`len`) bits, or for a one-pair cache a shift that leaves one bit for the mask to clear.
#[inline]
pub const fn path_cache_shift(len: u64) -> u32 {
    match len.trailing_zeros() {
        0 => 63,
        bits => 64 - bits,
    }
}

/// The cache pair of `path` in a cache of `len` pairs (a power of two, see [`PathTable::cache`]): the top bits
/// of `path` × [`PATH_HASH_MULTIPLIER`]. The pass emits it inline at every path record — one multiplication
/// and one shift (the mask is a no-op the optimiser drops, except for one-pair caches) — and the runtime must
/// agree with it.
#[inline]
pub const fn path_cache_slot(path: u64, len: u64) -> u64 {
    (path.wrapping_mul(PATH_HASH_MULTIPLIER) >> path_cache_shift(len)) & (len.wrapping_sub(1))
}

/// 64-bit FNV-1a: a tiny, well-specified hash that the pass, runtime and reader all compute identically.
pub const fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_continue(FNV_OFFSET, bytes)
}

/// FNV-1a offset basis: the starting state for [`fnv1a64_continue`].
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Continues an FNV-1a hash over more bytes, so a writer can hash a payload it emits in pieces.
pub const fn fnv1a64_continue(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

/// The `name_hash` of a module (descriptor and record header): what identifies a module across its builds.
/// `name` is the module name and `output` the absolute path of the file its code went into (both from the
/// metadata, `ModuleMeta::module_name` and `ModuleMeta::output`). Without an output (metadata written before
/// pathprof recorded one) it is `fnv1a64(name)`, the hash those profiles carry; with one, the name, a zero byte
/// and the output, so two modules of one name in different outputs are different modules.
pub const fn module_identity_hash(name: &[u8], output: &[u8]) -> u64 {
    let h = fnv1a64(name);
    if output.is_empty() {
        return h;
    }
    fnv1a64_continue(fnv1a64_continue(h, &[0]), output)
}

/// Rounds `n` up to a multiple of 8 (`None` on overflow).
pub const fn pad8(n: u64) -> Option<u64> {
    match n.checked_add(7) {
        Some(v) => Some(v & !7),
        None => None,
    }
}

/// Length of a whole record with the given sizes (`None` on overflow), shared by writer, reader and runtime.
pub fn record_len(meta_len: u64, num_counters: u64, num_sparse: u64) -> Option<u64> {
    let meta = pad8(meta_len)?;
    let counters = num_counters.checked_mul(8)?;
    let sparse = num_sparse.checked_mul(SPARSE_ENTRY_LEN as u64)?;
    (RECORD_HEADER_LEN as u64).checked_add(meta)?.checked_add(counters)?.checked_add(sparse)
}

/// The decoded fixed-size file header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Format version.
    pub version: u32,
    /// Reserved flags.
    pub flags: u32,
    /// Module records that follow.
    pub num_modules: u32,
    /// Bytes after the header.
    pub payload_len: u64,
    /// fnv1a64 of the payload.
    pub checksum: u64,
}

impl FileHeader {
    /// Encodes the header (magic included).
    pub fn encode(&self) -> [u8; FILE_HEADER_LEN] {
        let mut b = [0u8; FILE_HEADER_LEN];
        put(&mut b, 0, &MAGIC);
        put(&mut b, 8, &self.version.to_le_bytes());
        put(&mut b, 12, &self.flags.to_le_bytes());
        put(&mut b, 16, &self.num_modules.to_le_bytes());
        put(&mut b, 24, &self.payload_len.to_le_bytes());
        put(&mut b, 32, &self.checksum.to_le_bytes());
        b
    }

    /// Decodes a header; `None` if the magic is wrong. The version is returned as read, for the caller to gate.
    pub fn decode(b: &[u8; FILE_HEADER_LEN]) -> Option<FileHeader> {
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&b[0..8]);
        if magic != MAGIC {
            return None;
        }
        Some(FileHeader {
            version: u32_at(b, 8),
            flags: u32_at(b, 12),
            num_modules: u32_at(b, 16),
            payload_len: u64_at(b, 24),
            checksum: u64_at(b, 32),
        })
    }
}

/// The decoded fixed-size module record header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// Whole record length.
    pub record_len: u64,
    /// fnv1a64 of the metadata.
    pub meta_hash: u64,
    /// Metadata length (unpadded).
    pub meta_len: u64,
    /// Dense counters.
    pub num_counters: u64,
    /// Sparse entries.
    pub num_sparse: u64,
    /// `RECORD_FLAG_*`.
    pub flags: u64,
    /// Runs summed into the record.
    pub runs: u64,
    /// [`module_identity_hash`] of the module's name and output, so the runtime can recognise a stale build of
    /// the same module.
    pub name_hash: u64,
}

impl RecordHeader {
    /// Encodes the header.
    pub fn encode(&self) -> [u8; RECORD_HEADER_LEN] {
        let mut b = [0u8; RECORD_HEADER_LEN];
        put(&mut b, 0, &self.record_len.to_le_bytes());
        put(&mut b, 8, &self.meta_hash.to_le_bytes());
        put(&mut b, 16, &self.meta_len.to_le_bytes());
        put(&mut b, 24, &self.num_counters.to_le_bytes());
        put(&mut b, 32, &self.num_sparse.to_le_bytes());
        put(&mut b, 40, &self.flags.to_le_bytes());
        put(&mut b, 48, &self.runs.to_le_bytes());
        put(&mut b, 56, &self.name_hash.to_le_bytes());
        b
    }

    /// Decodes a header. Consistency with `record_len` is the caller's check ([`record_len`]).
    pub fn decode(b: &[u8; RECORD_HEADER_LEN]) -> RecordHeader {
        RecordHeader {
            record_len: u64_at(b, 0),
            meta_hash: u64_at(b, 8),
            meta_len: u64_at(b, 16),
            num_counters: u64_at(b, 24),
            num_sparse: u64_at(b, 32),
            flags: u64_at(b, 40),
            runs: u64_at(b, 48),
            name_hash: u64_at(b, 56),
        }
    }
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_reference_values() {
        // Reference vectors from the FNV specification (draft-eastlake-fnv).
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn identity_hash_is_the_name_hash_without_an_output_and_separates_outputs() {
        // Profiles written before modules had outputs carry fnv1a64(name): still the same identity.
        assert_eq!(module_identity_hash(b"util.c", b""), fnv1a64(b"util.c"));
        // With an output: exactly the bytes name, NUL, output.
        assert_eq!(module_identity_hash(b"util.c", b"/b/a/util.o"), fnv1a64(b"util.c\0/b/a/util.o"));
        let a = module_identity_hash(b"util.c", b"/b/a/util.o");
        assert_ne!(a, module_identity_hash(b"util.c", b"/b/b/util.o"));
        assert_ne!(a, fnv1a64(b"util.c"));
        // The separator keeps (name, output) pairs apart that concatenate to the same bytes.
        assert_ne!(module_identity_hash(b"ab", b"c"), module_identity_hash(b"a", b"bc"));
    }

    #[test]
    fn headers_round_trip() {
        let h = FileHeader { version: 1, flags: 0, num_modules: 3, payload_len: 99, checksum: 7 };
        assert_eq!(FileHeader::decode(&h.encode()), Some(h));
        let r = RecordHeader {
            record_len: 64,
            meta_hash: 5,
            meta_len: 0,
            num_counters: 0,
            num_sparse: 0,
            flags: 1,
            runs: 2,
            name_hash: 9,
        };
        assert_eq!(RecordHeader::decode(&r.encode()), r);
    }

    #[test]
    fn cache_slots_stay_in_range_and_spread_consecutive_paths() {
        for len in [1u64, 2, 1024, 4096] {
            for base in [0u64, 1 << 20, 390_000_000_000_000_000, (1 << 63) - 5000] {
                let slots: std::collections::BTreeSet<u64> =
                    (base..base + len).map(|p| path_cache_slot(p, len)).collect();
                assert!(slots.iter().all(|&s| s < len), "len {len}");
                // Fibonacci hashing sends `len` consecutive keys to over 80% of the slots (random slots: 63%; the three-gap
                // theorem), wherever the run of path numbers starts; a mask of the low bits would too, but not
                // a run of paths that differ in their high bits only (below).
                assert!(
                    len < 1024 || slots.len() as u64 * 10 >= len * 8,
                    "len {len}, base {base}: {} slots",
                    slots.len()
                );
            }
            let high_only: std::collections::BTreeSet<u64> = (0..len).map(|i| path_cache_slot(i << 40, len)).collect();
            assert!(len < 1024 || high_only.len() as u64 * 10 >= len * 6, "len {len}: {} slots", high_only.len());
        }
        assert_eq!(path_cache_slot(12345, 1), 0);
        assert_eq!(path_cache_shift(1024), 54);
    }

    #[test]
    fn record_len_checks_overflow() {
        assert_eq!(record_len(1, 2, 1), Some(64 + 8 + 16 + 32));
        assert_eq!(record_len(0, u64::MAX, 0), None);
    }
}
