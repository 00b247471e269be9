//! Reader, writer and merge of whole profiles, on synthetic modules built from `test_cfg` graphs.
//!
//! The counter placements below are chosen by hand (a spanning tree containing the virtual edges; the chords
//! carry counters): these tests exercise the format, not placement.

use pathprof_core::ball_larus::ResetRule;
use pathprof_core::graph::test_cfg;
use pathprof_core::{Cfg, EdgeKind};
use pathprof_format::layout::{self, FILE_HEADER_LEN, RECORD_HEADER_LEN};
use pathprof_format::meta::{LeftOutFunction, MetaError, Mode, ModuleMeta};
use pathprof_format::profile::{
    self, merge, read, write, MergeError, ModuleProfile, Profile, ProfileError, SparseEntry,
};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------------------------
// Fixtures (graphs and counter placements: `pathprof_core::fixtures`)

#[path = "support/edge_module.rs"]
mod edge_module;
use edge_module::{metadata, module, module_meta};

/// Two modules, one with sparse entries, flags and several runs.
fn sample() -> Profile {
    let a = module("a.c", vec![3, 8, 2, 5, 4]);
    let mut b = module("b.c", vec![0, 0, 0, 1, 1]);
    b.sparse = vec![
        SparseEntry { function: 0, path: 7, count: 3 },
        SparseEntry { function: 1, path: u128::MAX - 1, count: 9 },
    ];
    b.flags = layout::RECORD_FLAG_INCOMPLETE;
    b.runs = 4;
    Profile { modules: vec![a, b] }
}

/// Rewrites the header checksum so that a deliberate payload change reaches the record checks.
fn fix_checksum(bytes: &mut [u8]) {
    let sum = layout::fnv1a64(&bytes[FILE_HEADER_LEN..]);
    bytes[32..40].copy_from_slice(&sum.to_le_bytes());
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

// ---------------------------------------------------------------------------------------------------------------
// Round trip and layout

#[test]
fn round_trip() {
    let p = sample();
    assert_eq!(read(&write(&p)).unwrap(), p);
    let empty = Profile::default();
    assert_eq!(read(&write(&empty)).unwrap(), empty);
}

#[test]
fn written_bytes_follow_the_documented_layout() {
    let p = Profile { modules: vec![module("a.c", vec![3, 8, 2, 5, 4])] };
    let b = write(&p);
    let m = &p.modules[0];
    let meta_len = m.meta_bytes.len();
    let padded = meta_len.div_ceil(8) * 8;
    let record_len = RECORD_HEADER_LEN + padded + 5 * 8;
    assert_eq!(b.len(), FILE_HEADER_LEN + record_len);
    assert_eq!(&b[0..8], &layout::MAGIC);
    assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), layout::FILE_VERSION);
    assert_eq!(&b[12..16], &[0; 4], "flags");
    assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 1, "num_modules");
    assert_eq!(&b[20..24], &[0; 4], "reserved");
    assert_eq!(get_u64(&b, 24), record_len as u64, "payload_len");
    assert_eq!(get_u64(&b, 32), layout::fnv1a64(&b[40..]), "checksum");
    let r = FILE_HEADER_LEN;
    assert_eq!(get_u64(&b, r), record_len as u64);
    assert_eq!(get_u64(&b, r + 8), layout::fnv1a64(&m.meta_bytes));
    assert_eq!(get_u64(&b, r + 16), meta_len as u64);
    assert_eq!(get_u64(&b, r + 24), 5);
    assert_eq!(get_u64(&b, r + 32), 0);
    assert_eq!(get_u64(&b, r + 40), 0);
    assert_eq!(get_u64(&b, r + 48), 1);
    assert_eq!(get_u64(&b, r + 56), layout::fnv1a64(b"a.c"));
    let meta_at = r + RECORD_HEADER_LEN;
    assert_eq!(&b[meta_at..meta_at + meta_len], &m.meta_bytes[..]);
    assert!(b[meta_at + meta_len..meta_at + padded].iter().all(|&x| x == 0));
    assert_eq!(get_u64(&b, meta_at + padded), 3);
    assert_eq!(get_u64(&b, meta_at + padded + 32), 4);
}

#[test]
fn sparse_entry_layout() {
    let mut m = module("a.c", vec![0; 5]);
    m.sparse = vec![SparseEntry { function: 1, path: (5u128 << 64) | 6, count: 7 }];
    let b = write(&Profile { modules: vec![m.clone()] });
    let at = b.len() - 32;
    assert_eq!([get_u64(&b, at), get_u64(&b, at + 8), get_u64(&b, at + 16), get_u64(&b, at + 24)], [1, 6, 5, 7]);
}

// ---------------------------------------------------------------------------------------------------------------
// Every corruption is an error, never a panic

#[test]
fn truncation_at_every_offset_is_an_error() {
    let b = write(&sample());
    for len in 0..b.len() {
        assert!(read(&b[..len]).is_err(), "truncated to {len} bytes was accepted");
    }
}

#[test]
fn every_single_bit_flip_is_an_error() {
    let b = write(&sample());
    for i in 0..b.len() {
        for bit in 0..8 {
            let mut c = b.clone();
            c[i] ^= 1 << bit;
            assert!(read(&c).is_err(), "flipping bit {bit} of byte {i} was accepted");
        }
    }
}

#[test]
fn payload_bit_flip_is_a_checksum_mismatch() {
    let mut b = write(&sample());
    b[FILE_HEADER_LEN + 100] ^= 4;
    let e = read(&b).unwrap_err();
    assert!(matches!(e, ProfileError::ChecksumMismatch { .. }), "{e:?}");
    assert_eq!(e.to_string(), "checksum mismatch: the profile is corrupt");
}

#[test]
fn empty_and_foreign_files() {
    assert!(matches!(read(b""), Err(ProfileError::Empty)));
    let e = read(b"hello, world\n").unwrap_err();
    assert!(matches!(e, ProfileError::BadMagic));
    assert_eq!(e.to_string(), "not a pathprof profile (bad magic)");
    assert!(matches!(read(b"\x7fELF"), Err(ProfileError::BadMagic)));
    // A prefix of the magic is a truncated profile.
    let e = read(&layout::MAGIC[..5]).unwrap_err();
    assert_eq!(e.to_string(), "truncated profile: expected 40 bytes at offset 0, found 5");
    let mut b = write(&sample());
    b[7] = b'x';
    assert!(matches!(read(&b), Err(ProfileError::BadMagic)));
}

#[test]
fn wrong_version() {
    let mut b = write(&sample());
    b[8..12].copy_from_slice(&7u32.to_le_bytes());
    let e = read(&b).unwrap_err();
    assert!(matches!(e, ProfileError::UnsupportedVersion { found: 7 }));
    assert_eq!(e.to_string(), "unsupported profile version 7 (this pathprof reads version 1)");
    // The version is gated before the length: a newer format may lay out its header differently.
    assert!(matches!(read(&b[..FILE_HEADER_LEN]), Err(ProfileError::UnsupportedVersion { found: 7 })));
}

#[test]
fn header_flags_and_reserved_word_must_be_zero() {
    let mut b = write(&sample());
    b[12] = 1;
    assert!(matches!(read(&b), Err(ProfileError::UnsupportedFlags(1))));
    let mut b = write(&sample());
    b[23] = 0x80;
    assert!(matches!(read(&b), Err(ProfileError::NonZeroReserved(0x8000_0000))));
}

#[test]
fn payload_len_mismatch() {
    let mut b = write(&sample());
    b.push(0);
    let e = read(&b).unwrap_err();
    assert!(matches!(e, ProfileError::PayloadLenMismatch { .. }), "{e:?}");
    let b = write(&sample());
    let declared = get_u64(&b, 24);
    let mut c = b.clone();
    put_u64(&mut c, 24, declared - 8);
    assert!(matches!(read(&c), Err(ProfileError::PayloadLenMismatch { actual, .. }) if actual == declared));
    put_u64(&mut c, 24, u64::MAX);
    let e = read(&c).unwrap_err();
    assert!(matches!(e, ProfileError::Truncated { offset: 40, needed: u64::MAX, .. }), "{e:?}");
}

#[test]
fn duplicate_module() {
    let m = module("a.c", vec![3, 8, 2, 5, 4]);
    let b = write(&Profile { modules: vec![m.clone(), m] });
    let e = read(&b).unwrap_err();
    assert!(matches!(&e, ProfileError::DuplicateModule { module } if module == "a.c"), "{e:?}");
    assert_eq!(e.to_string(), "corrupt profile: module a.c appears twice");
}

#[test]
fn module_count_must_match_the_records() {
    let b = write(&sample());
    let mut c = b.clone();
    c[16] = 1; // one record fewer than written: the second is left over
    assert!(matches!(read(&c), Err(ProfileError::TrailingBytes { num_modules: 1, .. })));
    let mut c = b.clone();
    c[16] = 3; // one more: runs out of bytes
    assert!(matches!(read(&c), Err(ProfileError::Truncated { .. })));
    let mut c = b;
    c[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(read(&c), Err(ProfileError::Truncated { .. })));
}

#[test]
fn record_length_is_checked_against_its_sizes_and_the_input() {
    let b = write(&sample());
    let r = FILE_HEADER_LEN;
    let mut c = b.clone();
    put_u64(&mut c, r, get_u64(&b, r) + 8);
    fix_checksum(&mut c);
    assert!(matches!(read(&c), Err(ProfileError::RecordLenMismatch { record: 0, offset: 40, .. })));

    // Self-consistent but enormous sizes: refused before anything is allocated.
    let mut c = b.clone();
    let n = 1u64 << 40;
    put_u64(&mut c, r + 24, n);
    put_u64(&mut c, r, layout::record_len(get_u64(&b, r + 16), n, 0).unwrap());
    fix_checksum(&mut c);
    assert!(matches!(read(&c), Err(ProfileError::Truncated { offset: 40, .. })));

    let mut c = b;
    put_u64(&mut c, r + 32, u64::MAX); // num_sparse: record_len overflows
    fix_checksum(&mut c);
    assert!(matches!(read(&c), Err(ProfileError::RecordSizeOverflow { record: 0, .. })));
}

#[test]
fn meta_and_name_hashes_are_checked() {
    let b = write(&sample());
    let r = FILE_HEADER_LEN;
    let mut c = b.clone();
    put_u64(&mut c, r + 8, get_u64(&b, r + 8) ^ 1);
    fix_checksum(&mut c);
    assert!(matches!(read(&c), Err(ProfileError::MetaHashMismatch { record: 0 })));
    let mut c = b;
    put_u64(&mut c, r + 56, 0);
    fix_checksum(&mut c);
    assert!(matches!(read(&c), Err(ProfileError::NameHashMismatch { module }) if module == "a.c"));
}

#[test]
fn nonzero_metadata_padding_is_refused() {
    // A module name whose metadata is no multiple of 8 bytes long, so the record pads it.
    let m =
        ["a.c", "ab.c", "abc.c"].map(|name| module(name, vec![0; 5])).into_iter().find(|m| m.meta_bytes.len() % 8 != 0);
    let m = m.expect("fixture must need padding");
    let mut b = write(&Profile { modules: vec![m.clone()] });
    b[FILE_HEADER_LEN + RECORD_HEADER_LEN + m.meta_bytes.len()] = 1;
    fix_checksum(&mut b);
    assert!(matches!(read(&b), Err(ProfileError::NonZeroPadding { record: 0 })));
}

#[test]
fn corrupt_metadata_is_refused() {
    let mut m = module("a.c", vec![0; 5]);
    m.meta_bytes[0] = b'X';
    m.meta_hash = layout::fnv1a64(&m.meta_bytes);
    let e = read(&write(&Profile { modules: vec![m] })).unwrap_err();
    assert!(matches!(e, ProfileError::Meta { record: 0, .. }), "{e:?}");
    assert_eq!(e.to_string(), "corrupt profile: record 0: module metadata has a bad magic number");
}

#[test]
fn function_counters_must_lie_in_the_record() {
    // Four counters where the metadata needs five.
    let e = read(&write(&Profile { modules: vec![module("a.c", vec![0; 4])] })).unwrap_err();
    assert_eq!(
        e.to_string(),
        "corrupt profile: function early_exit of module a.c uses 2 counters from index 3, but the module has 4"
    );
    // Path mode: nothing but the record bounds num_counters; it is checked before validation allocates by it.
    let mut meta = module_meta("p.c");
    meta.mode = Mode::Path;
    meta.functions.truncate(1);
    meta.functions[0].edge_counters = vec![None; meta.functions[0].cfg.num_edges()];
    meta.functions[0].num_counters = u32::MAX;
    let m = ModuleProfile::new(meta, vec![], vec![], 0, 1);
    assert!(matches!(read(&write(&Profile { modules: vec![m] })), Err(ProfileError::CounterRange { .. })));
    let mut meta = module_meta("q.c");
    meta.functions[1].counter_base = u64::MAX;
    let m = ModuleProfile::new(meta, vec![0; 5], vec![], 0, 1);
    assert!(matches!(read(&write(&Profile { modules: vec![m] })), Err(ProfileError::CounterRange { .. })));
}

#[test]
fn cfg_hash_is_verified() {
    let mut meta = module_meta("a.c");
    meta.functions[0].cfg_hash ^= 1;
    let m = ModuleProfile::new(meta, vec![0; 5], vec![], 0, 1);
    let e = read(&write(&Profile { modules: vec![m] })).unwrap_err();
    assert_eq!(
        e.to_string(),
        "corrupt profile: function loop_diamond of module a.c has a CFG hash that does not match its graph"
    );
}

#[test]
fn sparse_entries_must_name_a_function() {
    let mut m = module("a.c", vec![0; 5]);
    m.sparse = vec![SparseEntry { function: 2, path: 0, count: 1 }];
    let e = read(&write(&Profile { modules: vec![m] })).unwrap_err();
    assert!(matches!(e, ProfileError::SparseFunctionOutOfRange { function: 2, num_functions: 2, .. }), "{e:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// cfg_hash

#[test]
fn cfg_hash_is_structural_and_stable() {
    let g = test_cfg(3, &[(0, 1), (0, 2), (1, 2)], &[2]);
    // Pinned: the pass stores this value in binaries, so a change here invalidates existing profiles. Computed
    // independently (a few lines of Python) from the encoding in `cfg_hash`'s doc comment.
    assert_eq!(profile::cfg_hash(&g), 0x05f6_9ef4_519f_c14d);
    let swapped = test_cfg(3, &[(0, 2), (0, 1), (1, 2)], &[2]);
    assert_ne!(profile::cfg_hash(&g), profile::cfg_hash(&swapped));
    let more_blocks = test_cfg(4, &[(0, 1), (0, 2), (1, 2)], &[2]);
    assert_ne!(profile::cfg_hash(&g), profile::cfg_hash(&more_blocks));
    // Same endpoints, different kind.
    let mut edges = g.edges().to_vec();
    edges[3].kind = EdgeKind::Termination;
    let term = Cfg::new(3, edges).unwrap();
    assert_ne!(profile::cfg_hash(&g), profile::cfg_hash(&term));
    // Same endpoints, different successor index.
    let mut edges = g.edges().to_vec();
    edges[1].kind = EdgeKind::Branch { succ: 5 };
    let succ = Cfg::new(3, edges).unwrap();
    assert_ne!(profile::cfg_hash(&g), profile::cfg_hash(&succ));
}

// ---------------------------------------------------------------------------------------------------------------
// Merge

#[test]
fn merge_sums_counts_ors_flags_and_adds_runs() {
    let p = sample();
    let mut q = sample();
    q.modules[0].counters = vec![1, 1, 1, 1, 1];
    q.modules[0].flags = layout::RECORD_FLAG_THREADED_NONATOMIC;
    q.modules[1].sparse = vec![
        SparseEntry { function: 1, path: u128::MAX - 1, count: 1 },
        SparseEntry { function: 0, path: 8, count: 2 },
    ];
    // Module order may differ between inputs.
    q.modules.reverse();
    let m = merge(&[p.clone(), q]).unwrap();
    assert_eq!(m.modules.len(), 2);
    let a = &m.modules[0];
    assert_eq!(a.meta.module_name, "a.c");
    assert_eq!(a.counters, vec![4, 9, 3, 6, 5]);
    assert_eq!(a.flags, layout::RECORD_FLAG_THREADED_NONATOMIC);
    assert_eq!(a.runs, 2);
    let b = &m.modules[1];
    assert_eq!(b.counters, vec![0, 0, 0, 2, 2]);
    assert_eq!(b.runs, 8);
    assert_eq!(b.flags, layout::RECORD_FLAG_INCOMPLETE);
    assert_eq!(
        b.sparse,
        vec![
            SparseEntry { function: 0, path: 7, count: 3 },
            SparseEntry { function: 1, path: u128::MAX - 1, count: 10 },
            SparseEntry { function: 0, path: 8, count: 2 },
        ]
    );
    // The result is a valid profile.
    assert_eq!(read(&write(&m)).unwrap(), m);
    // Merging one profile is the identity.
    assert_eq!(merge(std::slice::from_ref(&p)).unwrap(), p);
}

#[test]
fn merge_refuses_different_builds() {
    let p = sample();
    let mut q = sample();
    let mut meta = module_meta("b.c");
    meta.functions.swap(0, 1);
    meta.functions[0].counter_base = 0;
    meta.functions[1].counter_base = 2;
    q.modules[1] = ModuleProfile::new(meta, vec![0; 5], vec![], 0, 1);
    let e = merge(&[p, q]).unwrap_err();
    assert_eq!(e, MergeError::DifferentBuilds { module: "b.c".into() });
    assert_eq!(e.to_string(), "different builds of module b.c: the profiles come from different binaries");
}

/// Profiles of different programs sharing modules (a test suite's `%p` files: one library, a `main` each) add up
/// module by module, as the runtime's shared file would: a module only some inputs have is their sum.
#[test]
fn merge_adds_up_profiles_with_different_module_sets() {
    let p = sample();
    let mut only_a = sample();
    only_a.modules.pop();
    let mut only_b = sample();
    only_b.modules.remove(0);
    // a.c twice (p and only_a), b.c once (p): b.c comes after a.c, in order of first appearance.
    let m = merge(&[only_a.clone(), p.clone()]).unwrap();
    assert_eq!(m.modules.len(), 2);
    assert_eq!((m.modules[0].meta.module_name.as_str(), m.modules[1].meta.module_name.as_str()), ("a.c", "b.c"));
    assert_eq!(m.modules[0].counters, vec![6, 16, 4, 10, 8]);
    assert_eq!(m.modules[0].runs, 2);
    assert_eq!(m.modules[1], p.modules[1]);
    // Disjoint inputs: each module kept as it was; and three inputs, b.c in the second and third only.
    let m = merge(&[only_a.clone(), only_b.clone()]).unwrap();
    assert_eq!(m, p);
    let m = merge(&[only_a, only_b, p.clone()]).unwrap();
    assert_eq!(m.modules[1].counters, vec![0, 0, 0, 2, 2]);
    assert_eq!(m.modules[1].runs, 8);
    assert_eq!(m.modules[1].sparse[0].count, 6);
}

#[test]
fn merge_overflow_is_an_error_not_saturation() {
    let p = sample();
    let mut q = sample();
    q.modules[0].counters[2] = u64::MAX;
    let e = merge(&[p.clone(), q]).unwrap_err();
    assert_eq!(e, MergeError::Overflow { module: "a.c".into(), what: "counter 2".into() });
    let mut q = sample();
    q.modules[1].runs = u64::MAX;
    assert!(matches!(merge(&[p.clone(), q]), Err(MergeError::Overflow { .. })));
    let mut q = sample();
    q.modules[1].sparse[0].count = u64::MAX;
    assert!(matches!(merge(&[p, q]), Err(MergeError::Overflow { .. })));
}

#[test]
fn merge_needs_inputs_and_distinct_modules() {
    assert_eq!(merge(&[]), Err(MergeError::NoInputs));
    let m = module("a.c", vec![0; 5]);
    let dup = Profile { modules: vec![m.clone(), m] };
    assert!(matches!(merge(&[sample(), dup]), Err(MergeError::DuplicateModule { input: 2, .. })));
}

// ---------------------------------------------------------------------------------------------------------------
// Property tests: read returns on any input

/// Applies `edits` (offset, xor) to a written profile, optionally truncates or extends it, and optionally
/// repairs payload_len and the checksum so the corruption reaches the record and metadata checks.
fn mutate(mut b: Vec<u8>, edits: &[(usize, u8)], resize: Option<usize>, repair: bool) -> Vec<u8> {
    for &(at, x) in edits {
        let n = b.len();
        b[at % n] ^= x;
    }
    if let Some(len) = resize {
        b.resize(len % (b.len() * 2), 0xAB);
    }
    if repair && b.len() >= FILE_HEADER_LEN {
        let payload = (b.len() - FILE_HEADER_LEN) as u64;
        put_u64(&mut b, 24, payload);
        fix_checksum(&mut b);
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn read_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = read(&bytes);
        // Give arbitrary payloads a valid header too, so they reach the record parser.
        let mut b = write(&Profile::default());
        b[16] = bytes.first().copied().unwrap_or(1) % 4;
        b.extend_from_slice(&bytes);
        let payload = (b.len() - FILE_HEADER_LEN) as u64;
        put_u64(&mut b, 24, payload);
        fix_checksum(&mut b);
        let _ = read(&b);
    }

    #[test]
    fn read_never_panics_on_mutated_profiles(
        edits in proptest::collection::vec((any::<usize>(), 1u8..), 1..6),
        resize in proptest::option::of(any::<usize>()),
        repair in any::<bool>(),
    ) {
        let b = mutate(write(&sample()), &edits, resize, repair);
        if let Ok(p) = read(&b) {
            // Anything accepted is a consistent profile that writes back to the same bytes.
            prop_assert_eq!(write(&p), b);
        }
    }

    #[test]
    fn read_never_panics_when_metadata_is_mutated(
        edits in proptest::collection::vec((any::<usize>(), 1u8..), 1..4),
    ) {
        // Corrupt the metadata but keep both hashes consistent, so postcard and validation see the bytes.
        let mut m = module("a.c", vec![3, 8, 2, 5, 4]);
        for &(at, x) in &edits {
            let n = m.meta_bytes.len();
            m.meta_bytes[at % n] ^= x;
        }
        m.meta_hash = layout::fnv1a64(&m.meta_bytes);
        let _ = read(&write(&Profile { modules: vec![m] }));
    }
}

/// Metadata versions 1 (before the interprocedural modes), 2 (written before path mode counted arrivals, read as net counts), 3 (before modules
/// recorded their output, read with an empty output), 4 (before fork re-entries) and 5 (before the list of functions
/// left out), 6 (before path mode's loop resets, read without them), 7 (resets of one-path loops only), 8 (before
/// interprocedural reset loops), 9 (one storage unit) and 10 (no compilation directory) are still read; version 11
/// is written. Arrival
/// counting belongs to the path-numbering modes (path, context, piecewise) only, and fork re-entries of paths to
/// profiles that count arrivals.
#[test]
fn older_metadata_versions_still_read_and_arrivals_belong_to_path_numbering_modes() {
    let mut meta = module_meta("m.c");
    assert_eq!(meta.path_loop_resets, ResetRule::None);
    let mut placed = meta.clone();
    placed.compilation_dirs = vec!["/src/proj".into()];
    let v11 = placed.encode();
    assert_eq!(v11[4..8], 11u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v11).unwrap(), placed);
    // Version 10 is version 11 without the trailing `compilation_dirs` (read as empty: unknown).
    assert!(v11.ends_with(b"\x01\x09/src/proj"));
    let mut v10 = v11[..v11.len() - 11].to_vec();
    v10[4..8].copy_from_slice(&10u32.to_le_bytes());
    meta.compilation_dirs = Vec::new();
    assert_eq!(ModuleMeta::decode(&v10).unwrap(), meta);
    // Without an interprocedural program, versions 8 and 9 are version 10.
    let mut v9 = v10.clone();
    v9[4..8].copy_from_slice(&9u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v9).unwrap(), meta);
    let mut v8 = v10.clone();
    v8[4..8].copy_from_slice(&8u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v8).unwrap(), meta);
    let mut hoisted = meta.clone();
    hoisted.path_loop_resets = ResetRule::Hoisted;
    let v11_hoisted = hoisted.encode();
    assert_eq!(v11_hoisted.last(), Some(&0), "no compilation_dirs is one zero length byte");
    let mut v8_hoisted = v11_hoisted[..v11_hoisted.len() - 1].to_vec();
    v8_hoisted[4..8].copy_from_slice(&8u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v8_hoisted).unwrap(), hoisted);
    // Version 7 wrote a `bool` where version 8 writes the rule: false (0) is no resets, true (1) the one-path
    // rule; the rule's third value (2) is no version-7 bool.
    assert_eq!(v8.last(), Some(&0));
    let mut v7 = v8.clone();
    v7[4..8].copy_from_slice(&7u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v7).unwrap(), meta);
    let mut v7_true = v7.clone();
    *v7_true.last_mut().unwrap() = 1;
    let mut one_path = meta.clone();
    one_path.path_loop_resets = ResetRule::OnePath;
    assert_eq!(ModuleMeta::decode(&v7_true).unwrap(), one_path);
    assert_eq!(v8_hoisted.last(), Some(&2));
    let mut v7_bad = v8_hoisted.clone();
    v7_bad[4..8].copy_from_slice(&7u32.to_le_bytes());
    assert!(ModuleMeta::decode(&v7_bad).is_err());
    // Version 6 is version 7 without the trailing `path_loop_resets` byte.
    let mut v6 = v7[..v7.len() - 1].to_vec();
    v6[4..8].copy_from_slice(&6u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v6).unwrap(), meta);
    // Version 5 is version 6 without the trailing `left_out` list (here empty: one zero length byte).
    assert_eq!(v6.last(), Some(&0));
    let mut v5 = v6[..v6.len() - 1].to_vec();
    v5[4..8].copy_from_slice(&5u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v5).unwrap(), meta);
    // Version 4 is version 5 without the trailing `fork_reentries` byte.
    let mut v4 = v5[..v5.len() - 1].to_vec();
    v4[4..8].copy_from_slice(&4u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v4).unwrap(), meta);
    // Version 3 is version 4 without the output: postcard writes the name as a length byte (3) and "m.c",
    // then the empty output as one zero byte, at offset 8 + 1 + 3.
    assert_eq!(&v4[8..13], b"\x03m.c\x00");
    let mut v3 = v4.clone();
    v3.remove(12);
    v3[4..8].copy_from_slice(&3u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v3).unwrap(), meta);
    // Version 2 is version 3 without the trailing `path_arrivals` byte.
    let mut v2 = v3[..v3.len() - 1].to_vec();
    v2[4..8].copy_from_slice(&2u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v2).unwrap(), meta);
    // Version 1 is version 2 without `interproc`: here `None`, the trailing zero byte.
    assert_eq!(meta.interproc, None);
    assert_eq!(v2.last(), Some(&0));
    let mut v1 = v2[..v2.len() - 1].to_vec();
    v1[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(ModuleMeta::decode(&v1).unwrap(), meta);
    // An older version's header on a newer body leaves bytes over: corrupt, not misread.
    for old in [1u32, 2, 3, 4, 5, 6] {
        let mut mislabelled = v7.clone();
        mislabelled[4..8].copy_from_slice(&old.to_le_bytes());
        assert!(matches!(ModuleMeta::decode(&mislabelled), Err(MetaError::Corrupt(_))), "version {old}");
    }
    let mut edge_with_arrivals = meta.clone();
    edge_with_arrivals.path_arrivals = true;
    assert!(matches!(ModuleMeta::decode(&edge_with_arrivals.encode()), Err(MetaError::Inconsistent(_))));
    // Edge mode records block re-entries; path modes only with arrival counting.
    let mut forking = meta.clone();
    forking.fork_reentries = true;
    assert_eq!(ModuleMeta::decode(&forking.encode()).unwrap(), forking);
    forking.mode = Mode::Path;
    assert!(matches!(ModuleMeta::decode(&forking.encode()), Err(MetaError::Inconsistent(_))));
}

/// The functions a module left out round-trip, and an interprocedural module may lack a program only when it has
/// no function at all because every one was left out.
#[test]
fn left_out_functions_round_trip_and_only_they_excuse_a_missing_program() {
    let mut meta = module_meta("m.c");
    meta.left_out = vec![LeftOutFunction {
        name: "f".into(),
        display_name: "f".into(),
        file: "m.c".into(),
        start_line: 3,
        reason: "`callbr` (asm goto) is not supported".into(),
    }];
    assert_eq!(ModuleMeta::decode(&meta.encode()).unwrap(), meta);
    let mut alone = meta.clone();
    alone.mode = Mode::Context;
    alone.functions.clear();
    alone.path_arrivals = true;
    assert_eq!(ModuleMeta::decode(&alone.encode()).unwrap(), alone);
    alone.left_out.clear();
    assert!(matches!(ModuleMeta::decode(&alone.encode()), Err(MetaError::Inconsistent(_))));
    let mut missing_program = meta.clone();
    missing_program.mode = Mode::Context;
    assert!(matches!(ModuleMeta::decode(&missing_program.encode()), Err(MetaError::Inconsistent(_))));
}

/// A module's identity is its name and its output: a record's `name_hash` covers both (and is the plain name
/// hash without an output, as in older profiles); two modules of one name in different outputs are different
/// modules to `merge`, and a different build of one (name, output) is refused.
#[test]
fn module_identity_is_name_and_output() {
    let plain = module("u.c", vec![0; 5]);
    assert_eq!(plain.name_hash, layout::fnv1a64(b"u.c"));
    let in_output = |output: &str, counters: Vec<u64>| {
        let mut meta = module_meta("u.c");
        meta.output = output.into();
        ModuleProfile::new(meta, counters, vec![], 0, 1)
    };
    let (a, b) = (in_output("/b/a/u.o", vec![1, 0, 0, 0, 0]), in_output("/b/b/u.o", vec![2, 0, 0, 0, 0]));
    assert_eq!(a.name_hash, layout::fnv1a64(b"u.c\0/b/a/u.o"));
    assert_ne!(a.name_hash, b.name_hash);
    assert_eq!(a.meta.label(), "u.c in /b/a/u.o");
    // Both in one profile: it reads back, and merging it with itself doubles each.
    let p = Profile { modules: vec![a.clone(), b.clone()] };
    let back = read(&write(&p)).unwrap();
    assert_eq!(back, p);
    let m = merge(&[p.clone(), p]).unwrap();
    assert_eq!((m.modules[0].counters[0], m.modules[1].counters[0]), (2, 4));
    // A record whose name hash is the name's alone while it has an output is corrupt.
    let mut forged = a.clone();
    forged.name_hash = layout::fnv1a64(b"u.c");
    assert!(matches!(read(&write(&Profile { modules: vec![forged] })), Err(ProfileError::NameHashMismatch { .. })));
    // Another build of the same (name, output): refused, naming the output.
    let mut other_build = module_meta("u.c");
    other_build.output = "/b/a/u.o".into();
    other_build.functions.truncate(1);
    let other = ModuleProfile::new(other_build, vec![0; 3], vec![], 0, 1);
    let e = merge(&[Profile { modules: vec![a] }, Profile { modules: vec![other] }]).unwrap_err();
    assert_eq!(e.to_string(), "different builds of module u.c in /b/a/u.o: the profiles come from different binaries");
}

/// A context-mode module of two functions without calls, one storage unit: valid as it is.
fn ctx_meta_with_two_procs() -> ModuleMeta {
    use pathprof_format::meta::{InterprocMeta, InterprocProc, InterprocUnit, PathStorage};
    let f =
        |name: &str| metadata::function_meta(name, "ip.c", test_cfg(3, &[(0, 1), (0, 2), (1, 2)], &[2]), |_| vec![]);
    let mut meta = metadata::module_meta("ip.c", Mode::Context, vec![f("f"), f("g")]);
    let proc = InterprocProc { call_sites: vec![], external_entry: true, cut_vertices: vec![], reset_headers: vec![] };
    meta.interproc = Some(InterprocMeta {
        procs: vec![proc.clone(), proc],
        num_paths: 4,
        budget_cuts: 0,
        units: vec![InterprocUnit { first_proc: 0, storage: PathStorage::Dense }],
    });
    ModuleMeta::decode(&meta.encode()).expect("the sample context module validates");
    meta
}

/// A metadata blob of an older `version`: `meta`'s fields up to its functions, then `interproc` and `tail` in that
/// version's layout (postcard writes a struct, and a tuple, as its fields in order, without lengths).
fn older_metadata(
    version: u32,
    meta: &ModuleMeta,
    interproc: impl serde::Serialize,
    tail: impl serde::Serialize,
) -> Vec<u8> {
    let head = (&meta.module_name, &meta.output, meta.mode, &meta.weighting, meta.atomic, &meta.functions);
    let mut blob = pathprof_format::meta::META_MAGIC.to_vec();
    blob.extend_from_slice(&version.to_le_bytes());
    blob.extend_from_slice(&postcard::to_allocvec(&(head, interproc, tail)).unwrap());
    blob
}

/// Metadata version 5 wrote interprocedural procedures without cut vertices: such a context module still reads,
/// its procedures uncut; the same program written now (version 6) round-trips its cut vertices.
#[test]
fn version_5_interprocedural_programs_read_without_cut_vertices() {
    use pathprof_core::interproc::CallSite;
    use pathprof_format::meta::{InterprocMeta, InterprocProc, InterprocUnit, PathStorage};
    #[derive(serde::Serialize)]
    struct ProcV5 {
        call_sites: Vec<CallSite>,
        external_entry: bool,
    }
    #[derive(serde::Serialize)]
    struct InterprocV5 {
        procs: Vec<ProcV5>,
        num_paths: u128,
        storage: PathStorage,
        budget_cuts: u32,
    }
    let cfg = test_cfg(3, &[(0, 1), (0, 2), (1, 2)], &[2]);
    let f = metadata::function_meta("f", "ip.c", cfg, |_| vec![]);
    let mut meta = metadata::module_meta("ip.c", Mode::Context, vec![f]);
    meta.path_arrivals = true;
    meta.interproc = Some(InterprocMeta {
        procs: vec![InterprocProc {
            call_sites: vec![],
            external_entry: true,
            cut_vertices: vec![],
            reset_headers: vec![],
        }],
        num_paths: 2,
        budget_cuts: 0,
        units: vec![InterprocUnit { first_proc: 0, storage: PathStorage::Dense }],
    });
    let interproc = Some(InterprocV5 {
        procs: vec![ProcV5 { call_sites: vec![], external_entry: true }],
        num_paths: 2,
        storage: PathStorage::Dense,
        budget_cuts: 0,
    });
    let v5 = older_metadata(5, &meta, interproc, (meta.path_arrivals, meta.fork_reentries));
    assert_eq!(ModuleMeta::decode(&v5).unwrap(), meta);
    let mut cut = meta.clone();
    cut.interproc.as_mut().unwrap().procs[0].cut_vertices = vec![1];
    assert_eq!(ModuleMeta::decode(&cut.encode()).unwrap(), cut);
}

/// Version 8's interprocedural procedures had no reset loops: its bytes (written here field by field, as postcard
/// writes a struct) read as procedures with none, and version 9 round-trips them (the layout only: the edge-mode
/// functions of the sample module would not validate as an interprocedural program).
#[test]
fn version_8_interprocedural_programs_read_without_reset_loops() {
    use pathprof_core::interproc::{CallSite, Callee, ProcId};
    use pathprof_core::BlockId;
    use pathprof_format::meta::{InterprocMeta, InterprocProc, InterprocUnit, PathStorage};
    let mut meta = module_meta("m.c");
    meta.mode = Mode::Context;
    meta.path_arrivals = true;
    let site = CallSite { block: BlockId(1), callee: Callee::Proc(ProcId(1)) };
    let proc = |call_sites: Vec<CallSite>, resets: Vec<u32>| InterprocProc {
        call_sites,
        external_entry: true,
        cut_vertices: vec![2],
        reset_headers: resets,
    };
    meta.interproc = Some(InterprocMeta {
        procs: vec![proc(vec![site], vec![]), proc(vec![], vec![])],
        num_paths: 7,
        budget_cuts: 0,
        units: vec![InterprocUnit { first_proc: 0, storage: PathStorage::Dense }],
    });
    let v8_procs: Vec<(Vec<CallSite>, bool, Vec<u32>)> = vec![(vec![site], true, vec![2]), (vec![], true, vec![2])];
    let interproc = Some((v8_procs, 7u128, PathStorage::Dense, 0u32));
    let tail = (meta.path_arrivals, meta.fork_reentries, &meta.left_out, meta.path_loop_resets);
    let v8 = older_metadata(8, &meta, interproc, tail);
    assert_eq!(ModuleMeta::decode_unvalidated(&v8).unwrap(), meta);
    let mut with_resets = meta.clone();
    with_resets.interproc.as_mut().unwrap().procs[1].reset_headers = vec![1, 3];
    assert_eq!(ModuleMeta::decode_unvalidated(&with_resets.encode()).unwrap(), with_resets);
    // The same bytes claiming version 9 lack the last procedure's list: refused, not misread.
    let mut v9 = v8.clone();
    v9[4..8].copy_from_slice(&9u32.to_le_bytes());
    assert!(ModuleMeta::decode_unvalidated(&v9).is_err());
    // Version 9 wrote one storage for the program where version 10 writes its units: it reads as one unit.
    let v9_procs: Vec<&InterprocProc> = with_resets.interproc.as_ref().unwrap().procs.iter().collect();
    let hashed = PathStorage::Hashed { table: 0 };
    let interproc = Some((v9_procs, 7u128, hashed, 0u32));
    let v9 = older_metadata(9, &with_resets, interproc, tail);
    let mut one_unit = with_resets.clone();
    one_unit.interproc.as_mut().unwrap().units = vec![InterprocUnit { first_proc: 0, storage: hashed }];
    assert_eq!(ModuleMeta::decode_unvalidated(&v9).unwrap(), one_unit);
    // Units are written and read; units that do not partition the functions are refused.
    let mut two = with_resets.clone();
    let units = |firsts: &[u32]| firsts.iter().map(|&f| InterprocUnit { first_proc: f, storage: hashed }).collect();
    two.interproc.as_mut().unwrap().units = units(&[0, 1]);
    assert_eq!(ModuleMeta::decode_unvalidated(&two.encode()).unwrap(), two);
    for bad in [&[][..], &[1], &[0, 0], &[0, 2]] {
        let mut m = ctx_meta_with_two_procs();
        m.interproc.as_mut().unwrap().units = units(bad);
        assert!(ModuleMeta::decode(&m.encode()).is_err(), "units {bad:?}");
    }
}
