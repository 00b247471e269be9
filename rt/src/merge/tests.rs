use super::*;
use pathprof_format::layout::{MAGIC, RECORD_FLAG_INCOMPLETE, SPARSE_ENTRY_LEN};
use std::vec;
use std::vec::Vec;

/// [`validate`] with allocation failures treated as a test failure.
fn valid(file: &[u8]) -> Result<Existing<'_>, Invalid> {
    validate(file).expect("allocation")
}

fn group<'a>(meta: &'a [u8], name: &[u8], snap: &'a [u64], n: usize, order: usize) -> Group<'a> {
    Group {
        meta_hash: fnv1a64(meta),
        name_hash: fnv1a64(name),
        flags: 0,
        meta,
        num_counters: n,
        snap,
        sparse: &[],
        runs_add: 1,
        order,
    }
}

fn pc(function: u64, path: u64, count: u64) -> PathCount {
    PathCount { function, path, count, table: core::ptr::null_mut(), slot: core::ptr::null_mut() }
}

/// The sparse entries of a record as (function, path_lo, path_hi, count).
fn sparse_of(bytes: &[u8]) -> Vec<[u64; 4]> {
    bytes.chunks_exact(SPARSE_ENTRY_LEN).map(|e| [le64(e, 0), le64(e, 1), le64(e, 2), le64(e, 3)]).collect()
}

fn sorted(mut g: Vec<Group<'_>>) -> Vec<Group<'_>> {
    g.sort_by_key(|g| g.meta_hash);
    g
}

fn image(existing: Option<&[u8]>, groups: &[Group<'_>]) -> (Vec<u8>, Vec<Note>, Summary) {
    let mut out = MVec::new();
    let mut notes = Vec::new();
    let e = existing.map(|b| valid(b).expect("test input must be valid"));
    let s = build(e, groups, &mut out, &mut |n| notes.push(n)).unwrap();
    (out.as_slice().to_vec(), notes, s)
}

/// (header, counters, sparse bytes) of every record, via the validated iterator.
fn records(file: &[u8]) -> Vec<(RecordHeader, Vec<u64>, Vec<u8>)> {
    let e = valid(file).expect("builder output must validate");
    e.records()
        .map(|r| {
            let c = (0..r.header.num_counters as usize).map(|i| le64(r.counters, i)).collect();
            (r.header, c, r.sparse.to_vec())
        })
        .collect()
}

/// A well-formed file: the header of `num_modules` records over `payload`, then the payload.
fn with_file_header(num_modules: u32, payload: &[u8]) -> Vec<u8> {
    let (payload_len, checksum) = (payload.len() as u64, fnv1a64(payload));
    let h = FileHeader { version: FILE_VERSION, flags: 0, num_modules, payload_len, checksum };
    [&h.encode()[..], payload].concat()
}

/// A valid file with one record that carries sparse entries (as a path-mode writer would produce).
fn file_with_sparse(meta: &[u8], name: &[u8], counters: &[u64], sparse: &[[u64; 4]]) -> Vec<u8> {
    let h = RecordHeader {
        record_len: record_len(meta.len() as u64, counters.len() as u64, sparse.len() as u64).unwrap(),
        meta_hash: fnv1a64(meta),
        meta_len: meta.len() as u64,
        num_counters: counters.len() as u64,
        num_sparse: sparse.len() as u64,
        flags: 1,
        runs: 5,
        name_hash: fnv1a64(name),
    };
    let mut p = h.encode().to_vec();
    p.extend_from_slice(meta);
    p.resize(p.len() + (pad8(meta.len() as u64).unwrap() as usize - meta.len()), 0);
    for c in counters {
        p.extend_from_slice(&c.to_le_bytes());
    }
    for e in sparse {
        for v in e {
            p.extend_from_slice(&v.to_le_bytes());
        }
    }
    with_file_header(1, &p)
}

#[test]
fn fresh_file_has_modules_in_registration_order() {
    let (a, b) = (b"meta-a".as_slice(), b"meta-bb".as_slice());
    let groups = sorted(vec![group(a, b"a.c", &[1, 2], 2, 1), group(b, b"b.c", &[7], 1, 0)]);
    let (f, notes, s) = image(None, &groups);
    assert!(notes.is_empty());
    assert_eq!(s, Summary { added: 2, ..Summary::default() });
    let r = records(&f);
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].0.meta_hash, r[0].1.clone(), r[0].0.runs), (fnv1a64(b), vec![7], 1));
    assert_eq!((r[1].0.meta_hash, r[1].1.clone()), (fnv1a64(a), vec![1, 2]));
    assert_eq!(r[1].0.name_hash, fnv1a64(b"a.c"));
}

#[test]
fn merge_sums_counters_and_runs_and_keeps_foreign_records() {
    let m = b"meta".as_slice();
    let other = b"other-module".as_slice();
    let first = sorted(vec![group(m, b"m.c", &[1, 2, 3], 3, 0), group(other, b"o.c", &[9], 1, 1)]);
    let (f1, _, _) = image(None, &first);
    // Second process: only `m` is registered; `o` (say, a dlopen'd library) must survive unchanged.
    let second = [group(m, b"m.c", &[10, 20, 30], 3, 0)];
    let (f2, notes, s) = image(Some(&f1), &second);
    assert!(notes.is_empty());
    assert_eq!(s, Summary { merged: 1, kept: 1, ..Summary::default() });
    let r = records(&f2);
    assert_eq!(r[0].1, vec![11, 22, 33]);
    assert_eq!(r[0].0.runs, 2);
    assert_eq!(r[1].1, vec![9]);
    assert_eq!(r[1].0.runs, 1);
}

#[test]
fn copies_of_one_build_are_summed() {
    let m = b"shared-object-twice".as_slice();
    let snap = [1, 2, 10, 20];
    let (f, _, _) = image(None, &[group(m, b"x.c", &snap, 2, 0)]);
    let r = records(&f);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1, vec![11, 22]);
}

#[test]
fn a_second_dump_of_the_same_process_adds_no_run() {
    let m = b"meta".as_slice();
    let (f1, _, _) = image(None, &[group(m, b"m.c", &[1], 1, 0)]);
    let mut g = group(m, b"m.c", &[4], 1, 0);
    g.runs_add = 0;
    let (f2, _, _) = image(Some(&f1), &[g]);
    let r = records(&f2);
    assert_eq!((r[0].0.runs, r[0].1[0]), (1, 5));
}

#[test]
fn stale_build_is_dropped_with_a_note() {
    let old = b"old-build".as_slice();
    let new = b"new-build".as_slice();
    let (f1, _, _) = image(None, &[group(old, b"m.c", &[100], 1, 0)]);
    let (f2, notes, s) = image(Some(&f1), &[group(new, b"m.c", &[1, 1], 2, 0)]);
    assert_eq!(notes, vec![Note::Stale { name_hash: fnv1a64(b"m.c") }]);
    assert_eq!(s, Summary { dropped: 1, added: 1, ..Summary::default() });
    let r = records(&f2);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].0.meta_hash, r[0].1.clone()), (fnv1a64(new), vec![1, 1]));
}

#[test]
fn same_meta_hash_with_other_sizes_is_dropped() {
    let m = b"meta".as_slice();
    let (f1, _, _) = image(None, &[group(m, b"m.c", &[1, 2], 2, 0)]);
    let (f2, notes, _) = image(Some(&f1), &[group(m, b"m.c", &[5], 1, 0)]);
    assert_eq!(notes, vec![Note::Mismatch { meta_hash: fnv1a64(m) }]);
    let r = records(&f2);
    assert_eq!((r.len(), r[0].1.clone(), r[0].0.runs), (1, vec![5], 1));
}

#[test]
fn sparse_entries_and_flags_are_carried_through_a_merge() {
    let m = b"path-mode-module".as_slice();
    let f1 = file_with_sparse(m, b"p.c", &[3, 4], &[[0, 17, 0, 6], [1, 2, 3, 4]]);
    let (f2, _, _) = image(Some(&f1), &[group(m, b"p.c", &[1, 1], 2, 0)]);
    let r = records(&f2);
    assert_eq!(r[0].0.num_sparse, 2);
    assert_eq!(r[0].0.flags, 1);
    assert_eq!(r[0].0.runs, 6);
    assert_eq!(r[0].1, vec![4, 5]);
    assert_eq!(r[0].2, f1[f1.len() - 2 * SPARSE_ENTRY_LEN..].to_vec());
}

#[test]
fn validate_rejects_every_truncation_and_corruption() {
    let m = b"meta".as_slice();
    let (f, _, _) = image(None, &[group(m, b"m.c", &[1, 2, 3], 3, 0)]);
    assert!(valid(&f).is_ok());
    for n in 0..f.len() {
        assert!(valid(&f[..n]).is_err(), "truncated to {n} bytes");
    }
    let mut longer = f.clone();
    longer.push(0);
    assert!(valid(&longer).is_err());
    // Every byte counts, the header's flags (12..16) and reserved word (20..24) included: the reader refuses a
    // file with either nonzero, so the runtime does not merge into one either.
    for i in 0..f.len() {
        let mut bad = f.clone();
        bad[i] ^= 0x40;
        assert!(valid(&bad).is_err(), "flipped byte {i}");
    }
    assert_eq!(valid(b"hello world, this is definitely not a profile at all").err(), Some("bad magic"));
}

#[test]
fn validate_checks_record_lengths_even_with_a_correct_checksum() {
    let m = b"meta".as_slice();
    let (f, _, _) = image(None, &[group(m, b"m.c", &[1], 1, 0)]);
    // Claim one more counter than the record holds, and fix the checksum up.
    let mut bad = f.clone();
    bad[FILE_HEADER_LEN + 24] += 1;
    let ck = fnv1a64(&bad[FILE_HEADER_LEN..]);
    bad[32..40].copy_from_slice(&ck.to_le_bytes());
    assert_eq!(valid(&bad).err(), Some("record length inconsistent with its sizes"));
    // An absurd num_modules.
    let mut bad = f.clone();
    bad[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(valid(&bad).is_err());
}

/// Random byte soup and random mutations of a valid file: validation and merging never panic, and whatever
/// validates merges into a valid file.
#[test]
fn random_inputs_never_panic() {
    let m = b"meta".as_slice();
    let (f, _, _) = image(None, &[group(m, b"m.c", &[1, 2, 3], 3, 0)]);
    let mut rng = pathprof_core::fixtures::Rng::new(0x2545_f491_4f6c_dd1d);
    let mut rnd = move || rng.next();
    for _ in 0..20_000 {
        let mut b = if rnd() % 4 == 0 {
            let mut v = MAGIC.to_vec();
            v.extend((0..rnd() % 200).map(|_| rnd() as u8));
            v
        } else {
            f.clone()
        };
        for _ in 0..rnd() % 4 {
            let i = (rnd() as usize) % b.len();
            b[i] = rnd() as u8;
        }
        if rnd() % 3 == 0 {
            // Re-seal the checksum so the structural checks are reached.
            if b.len() >= FILE_HEADER_LEN {
                let ck = fnv1a64(&b[FILE_HEADER_LEN..]);
                b[32..40].copy_from_slice(&ck.to_le_bytes());
            }
        }
        if let Ok(e) = valid(&b) {
            let mut out = MVec::new();
            let drained = [pc(0, 1, 1), pc(0, 1, 2), pc(5, 3, u64::MAX)];
            let mut g = group(m, b"m.c", &[1, 1, 1], 3, 0);
            g.sparse = &drained;
            build(Some(e), &[g], &mut out, &mut |_| {}).unwrap();
            assert!(valid(out.as_slice()).is_ok());
        }
    }
}

#[test]
fn signature_ignores_order() {
    assert_eq!(signature([1u64, 2, 3].into_iter()), signature([3u64, 1, 2].into_iter()));
    assert_ne!(signature([1u64, 2].into_iter()), signature([1u64, 3].into_iter()));
}

#[test]
fn drained_path_counts_are_summed_wrapping_sorted_and_zeros_dropped() {
    let m = b"path-mode-module".as_slice();
    // File entries in no particular order, one with a path above 2^64 and one negative count.
    let f1 = file_with_sparse(m, b"p.c", &[3], &[[1, 50, 0, 3], [0, 17, 0, 6], [0, 9, 0, u64::MAX], [1, 2, 3, 4]]);
    // Sorted drained counts with a repeated key (two copies of the build) and a retraction.
    let drained = [pc(0, 9, 1), pc(0, 17, u64::MAX), pc(0, 20, 5), pc(0, 20, 2), pc(1, 50, 1)];
    let mut g = group(m, b"p.c", &[1], 1, 0);
    g.sparse = &drained;
    g.flags = RECORD_FLAG_INCOMPLETE;
    let (f2, notes, s) = image(Some(&f1), &[g]);
    assert!(notes.is_empty());
    assert_eq!(s, Summary { merged: 1, ..Summary::default() });
    let r = records(&f2);
    assert_eq!(r[0].0.num_sparse, 4);
    assert_eq!((r[0].0.flags, r[0].0.runs, r[0].1.clone()), (1, 6, vec![4]));
    // (0, 9) wrapped to 0 and is gone; keys sorted by (function, path) with the path as a 128-bit number.
    assert_eq!(sparse_of(&r[0].2), vec![[0, 17, 0, 5], [0, 20, 0, 7], [1, 50, 0, 4], [1, 2, 3, 4]]);
}

#[test]
fn a_new_record_carries_the_drained_path_counts() {
    let m = b"fresh-path-module".as_slice();
    let drained = [pc(0, 1, 2), pc(0, 1, u64::MAX - 1), pc(0, 3, u64::MAX), pc(2, 0, 1), pc(2, 0, 1)];
    let mut g = group(m, b"q.c", &[], 0, 0);
    g.sparse = &drained;
    let (f, _, _) = image(None, &[g]);
    let r = records(&f);
    assert_eq!((r[0].0.num_sparse, r[0].0.flags, r[0].0.runs), (2, 0, 1));
    assert_eq!(sparse_of(&r[0].2), vec![[0, 3, 0, u64::MAX], [2, 0, 0, 2]]);
    // A second dump with nothing new for the tables leaves the entries as they are.
    let mut g2 = group(m, b"q.c", &[], 0, 0);
    g2.runs_add = 0;
    let (f2, _, _) = image(Some(&f), &[g2]);
    assert_eq!(f2, f);
}

/// The runtime and the reader frame files with one walk (`pathprof_format::records`): what `pathprof` refuses —
/// header flags, the reserved header word, a module recorded twice — the runtime does not merge into either
/// (it warns and replaces the file).
#[test]
fn files_the_reader_refuses_are_not_merged_into() {
    use pathprof_format::meta::{Mode, ModuleMeta};
    use pathprof_format::profile::{read, ProfileError};
    let meta = ModuleMeta {
        interproc: None,
        path_arrivals: false,
        fork_reentries: false,
        left_out: Vec::new(),
        module_name: "m.c".into(),
        output: std::string::String::new(),
        mode: Mode::Edge,
        weighting: "uniform".into(),
        atomic: false,
        functions: vec![],
        path_loop_resets: pathprof_core::ball_larus::ResetRule::None,
        compilation_dirs: std::vec::Vec::new(),
    }
    .encode();
    let (f, _, _) = image(None, &[group(&meta, b"m.c", &[], 0, 0)]);
    assert!(read(&f).is_ok() && valid(&f).is_ok());
    // The checksum covers the payload only, so these header edits need no resealing.
    let mut flagged = f.clone();
    flagged[12] = 1;
    assert!(matches!(read(&flagged), Err(ProfileError::UnsupportedFlags(1))));
    assert_eq!(valid(&flagged).err(), Some("unsupported header flags"));
    let mut reserved = f.clone();
    reserved[20] = 3;
    assert!(matches!(read(&reserved), Err(ProfileError::NonZeroReserved(3))));
    assert_eq!(valid(&reserved).err(), Some("nonzero reserved header word"));
    // The one record twice, in a well-formed file.
    let record = &f[FILE_HEADER_LEN..];
    let payload = [record, record].concat();
    let twice = with_file_header(2, &payload);
    assert!(matches!(read(&twice), Err(ProfileError::DuplicateModule { module }) if module == "m.c"));
    assert_eq!(valid(&twice).err(), Some("a module appears twice"));
    // Nonzero metadata padding, checksum resealed.
    let mut padded = f.clone();
    padded[FILE_HEADER_LEN + RECORD_HEADER_LEN + meta.len()] = 1;
    let ck = fnv1a64(&padded[FILE_HEADER_LEN..]);
    padded[32..40].copy_from_slice(&ck.to_le_bytes());
    assert_ne!(meta.len() % 8, 0, "the metadata needs padding for this case");
    assert!(matches!(read(&padded), Err(ProfileError::NonZeroPadding { record: 0 })));
    assert_eq!(valid(&padded).err(), Some("nonzero metadata padding"));
}
