//! `pathprof export --format=sample-text` on synthetic profiles: every record below is derived by hand from
//! the executions each fixture describes (see `common/mod.rs`) and the sample-profile rules in
//! `cli/src/export.rs` (offset = line − start line 9, modulo 2^16; samples = the largest count of a block with
//! the line; total = sum of the body; head = entry count).

mod common;

use common::*;
use pathprof_core::graph::test_cfg;
use pathprof_format::layout::RECORD_FLAG_THREADED_NONATOMIC;
use pathprof_format::meta::PathStorage;
use pathprof_format::profile::Profile;

/// `lecture` (blocks 11, 8, 4, 11, 7, 11; lines [10,11] [12] [13,14,15] [16] [17,19] [20]):
/// offsets 1: 11, 2: 11, 3: 8, 4–6: 4, 7: 11, 8: 7, 10: 7, 11: 11; total 78, head 11.
const LECTURE: &str = "lecture:78:11\n 1: 11\n 2: 11\n 3: 8\n 4: 4\n 5: 4\n 6: 4\n 7: 11\n 8: 7\n 10: 7\n 11: 11\n";
/// `diamonds` (13 blocks, lines 50..=62, counts 7 5 2 repeating, 7 last): offsets 41..=53; total
/// 5×7 + 4×5 + 4×2 = 63, head 7.
const DIAMONDS: &str = "diamonds:63:7\n 41: 7\n 42: 5\n 43: 2\n 44: 7\n 45: 5\n 46: 2\n 47: 7\n 48: 5\n 49: 2\n \
                        50: 7\n 51: 5\n 52: 2\n 53: 7\n";
/// `loop_diamond` (blocks 2, 8, 6, 2, 8, 2; lines 30..=35): offsets 21..=26; total 28, head 2.
const LOOP_DIAMOND: &str = "loop_diamond:28:2\n 21: 2\n 22: 8\n 23: 6\n 24: 2\n 25: 8\n 26: 2\n";
/// `uses_setjmp` (5 calls, every block 5 times — bb1 re-entered twice by longjmp, bb2 left twice by it; lines
/// 40..=43): offsets 31..=34; total 20, head 5.
const USES_SETJMP: &str = "uses_setjmp:20:5\n 31: 5\n 32: 5\n 33: 5\n 34: 5\n";

/// The lecture graph with lines shared between blocks: bb0 [10, 5], bb1 [12], bb2 [12, 13], bb3 [14],
/// bb4 [14], bb5 [15]; blocks 11, 8, 4, 11, 7, 11. Line 12 is in bb1 (8) and bb2 (4): 8; line 14 in bb3 (11)
/// and bb4 (7): 11; line 5 is before the start line 9: offset (5 − 9) mod 2^16 = 65532.
/// Offsets 1: 11, 3: 8, 4: 4, 5: 11, 6: 11, 65532: 11; total 56, head 11.
const SPLIT: &str = "split:56:11\n 1: 11\n 3: 8\n 4: 4\n 5: 11\n 6: 11\n 65532: 11\n";

fn split() -> Fixture {
    let mut f = lecture("split", true);
    let lines: [&[u32]; 6] = [&[10, 5], &[12], &[12, 13], &[14], &[14], &[15]];
    for (b, l) in f.meta.blocks.iter_mut().zip(lines) {
        b.lines = l.to_vec();
    }
    f
}

/// The demo module of decode.rs plus `split`: lecture, loop_diamond, uses_setjmp, diamonds, hashed_loop (no
/// lines), never_called, wide (no lines), split.
fn demo_with_split() -> Profile {
    let mut fixtures = demo_functions();
    fixtures.push(split());
    Profile { modules: vec![module("demo.c", fixtures)] }
}

fn export(p: &std::path::Path) -> String {
    ok(&[&"export", &"--format=sample-text", &p, &"-o", &"-"])
}

#[test]
fn path_profile_exports_hand_derived_records_hottest_first() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo_with_split());
    // Hottest first by total: 78, 63, 56, 28, 20. never_called did not run; hashed_loop and wide ran but have
    // no lines (a file name but no line: treated like compiler-generated code, dropped without a warning).
    let expected = [LECTURE, DIAMONDS, SPLIT, LOOP_DIAMOND, USES_SETJMP].concat();
    assert_eq!(export(&p), expected);

    // -o FILE writes the same bytes (and `--format sample-text` is the same option).
    let out = d.path("out.prof");
    assert_eq!(ok(&[&"export", &"--format", &"sample-text", &p, &"-o", &out]), "");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), expected);
    // Replacing an existing file works too.
    assert_eq!(ok(&[&"export", &p, &"--format=sample-text", &"--output", &out]), "");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), expected);
}

#[test]
fn edge_and_path_profiles_of_the_same_runs_export_the_same_record() {
    let d = Dir::new();
    let lines: Vec<Vec<u32>> = (0..6).map(|b| vec![30 + b]).collect();
    let lines: Vec<&[u32]> = lines.iter().map(Vec::as_slice).collect();
    let edge =
        Profile { modules: vec![edge_module("e.c", vec![edge_loop_diamond("loop_diamond", "demo.c", &lines)], 0)] };
    let e = d.write_profile("edge.pathprof", &edge);
    assert_eq!(export(&e), LOOP_DIAMOND);
    let path = Profile { modules: vec![module("p.c", vec![loop_diamond("loop_diamond", PathStorage::Dense, true)])] };
    let p = d.write_profile("path.pathprof", &path);
    assert_eq!(export(&p), LOOP_DIAMOND);
}

#[test]
fn copies_of_one_name_are_summed() {
    let d = Dir::new();
    let l: [&[u32]; 6] = [&[30], &[31], &[32], &[33], &[34], &[35]];
    // `inl` is the same source function (inl.h:9) in two modules: summed silently. `helper` is two different
    // static functions (x.c:9 and y.c:9) with one name: summed, with one warning.
    let x = edge_module("x.c", vec![edge_loop_diamond("inl", "inl.h", &l), edge_loop_diamond("helper", "x.c", &l)], 0);
    let y = edge_module("y.c", vec![edge_loop_diamond("helper", "y.c", &l), edge_loop_diamond("inl", "inl.h", &l)], 0);
    let p = d.write_profile("xy.pathprof", &Profile { modules: vec![x, y] });
    let o = pathprof(&[&"export", &"--format=sample-text", &p, &"-o", &"-"]);
    assert_eq!(o.status.code(), Some(0));
    // Twice 2, 8, 6, 2, 8, 2: total 56, head 4; equal totals are ordered by name.
    let twice = |name: &str| format!("{name}:56:4\n 21: 4\n 22: 16\n 23: 12\n 24: 4\n 25: 16\n 26: 4\n");
    assert_eq!(stdout(&o), twice("helper") + &twice("inl"));
    assert_eq!(
        stderr(&o),
        "pathprof: warning: helper is defined in several places (x.c:9, y.c:9): their samples are summed under one \
         name, as the sample loader matches by name only (-funique-internal-linkage-names keeps static functions \
         apart)\n"
    );
}

#[test]
fn inexact_functions_are_skipped_with_one_warning_each() {
    let d = Dir::new();
    let l: [&[u32]; 6] = [&[30], &[31], &[32], &[33], &[34], &[35]];
    // a.c: lecture (exact) and uses_setjmp without its re-entry block (a negative path: inexact).
    let mut s = uses_setjmp();
    s.meta.reentry_blocks.clear();
    let a = module("a.c", vec![lecture("lecture", true), s]);
    // b.c's `shared` was counted non-atomically by several threads: inexact, so c.c's exact copy is not
    // exported either (the sum would be wrong). d.c's `alone` has no debug information at all.
    let b = edge_module("b.c", vec![edge_loop_diamond("shared", "s.c", &l)], RECORD_FLAG_THREADED_NONATOMIC);
    let c = edge_module("c.c", vec![edge_loop_diamond("shared", "s.c", &l), edge_loop_diamond("kept", "c.c", &l)], 0);
    let (mut alone, counts) = edge_loop_diamond("alone", "", &[]);
    alone.start_line = 0;
    let dd = edge_module("d.c", vec![(alone, counts)], 0);
    let p = d.write_profile("mixed.pathprof", &Profile { modules: vec![a, b, c, dd] });
    let o = pathprof(&[&"export", &"--format=sample-text", &p, &"-o", &"-"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), [LECTURE, &LOOP_DIAMOND.replace("loop_diamond", "kept")].concat());
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "pathprof: warning: not exporting uses_setjmp (module a.c): its counts are not exact (path 3 counted a \
             negative number of times; edge e5 (bb1->bb4) derived as negative)",
            "pathprof: warning: not exporting shared (module b.c): its counts are not exact (counters were updated \
             non-atomically by several threads, increments may be lost)",
            "pathprof: warning: not exporting alone (module d.c): it has no debug information (compile with -g or \
             -gline-tables-only)",
        ],
        "{err}"
    );
}

#[test]
fn export_errors_are_one_line() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let out = d.path("out.prof");
    let o = pathprof(&[&"export", &"--format=gcov", &p, &"-o", &out]);
    assert_one_line_error(&o, "invalid value 'gcov' for '--format <FORMAT>'");
    assert!(stderr(&o).contains("sample-text"), "{}", stderr(&o));
    assert_one_line_error(&pathprof(&[&"export", &p, &"-o", &out]), "--format");
    assert_one_line_error(&pathprof(&[&"export", &"--format=sample-text", &p]), "--output");
    assert_one_line_error(&pathprof(&[&"export", &"--format=sample-text", &"-o", &out]), "FILE");
    let bad = d.path("bad.pathprof");
    std::fs::write(&bad, b"not a profile").unwrap();
    assert_one_line_error(
        &pathprof(&[&"export", &"--format=sample-text", &bad, &"-o", &out]),
        "bad.pathprof: not a pathprof profile (bad magic)",
    );
    // Nothing ran: an empty file would not be a sample profile clang accepts.
    let idle =
        d.write_profile("idle.pathprof", &Profile { modules: vec![module("i.c", vec![lecture("idle", false)])] });
    assert_one_line_error(&pathprof(&[&"export", &"--format=sample-text", &idle, &"-o", &out]), "nothing to export: ");
    assert!(!out.exists(), "no output file is written on error");
    // An output in a missing directory.
    let o = pathprof(&[&"export", &"--format=sample-text", &p, &"-o", &d.path("no/such/dir/x.prof")]);
    assert_one_line_error(&o, "cannot save the sample profile");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_pathprof")).args(["export", "--help"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("sample-text"));
}

#[test]
fn a_corrupt_path_record_is_an_error() {
    let d = Dir::new();
    let mut f = lecture("lecture", true);
    f.meta.path.as_mut().unwrap().num_paths = 9;
    let p = d.write_profile("m.pathprof", &Profile { modules: vec![module("demo.c", vec![f])] });
    assert_one_line_error(&pathprof(&[&"export", &"--format=sample-text", &p, &"-o", &"-"]), "exporting ");
}

#[test]
fn self_check_edge_fixture() {
    // The edge-mode fixture derives the counts the comments above rely on.
    let d = Dir::new();
    let cfg = test_cfg(1, &[], &[0]);
    let f = edge_function("one", "o.c", cfg, &[&[10]]);
    let p = d.write_profile("one.pathprof", &Profile { modules: vec![edge_module("o.c", vec![(f, vec![5])], 0)] });
    assert_eq!(export(&p), "one:5:5\n 1: 5\n");
}
