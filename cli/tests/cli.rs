//! End-to-end tests of the `pathprof` binary on profiles written with `pathprof_format::profile::write`.
//!
//! Fixture functions have hand-chosen spanning trees: only chord counts are stored in the counters, and the
//! expected edge and block counts below are computed by hand from the runs they describe.

use pathprof_core::fixtures::{early_exit_cfg, early_exit_chords, longjmp_cfg, loop_diamond_cfg, loop_diamond_chords};
use pathprof_core::Cfg;
use pathprof_format::layout;
use pathprof_format::meta::{FunctionMeta, Mode, ModuleMeta};
use pathprof_format::profile::{self, ModuleProfile, Profile};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::{assert_one_line_error, metadata, pathprof, stderr, stdout, Dir};

// ---------------------------------------------------------------------------------------------------------------
// Fixtures (graphs and counter placements: `pathprof_core::fixtures`)

/// Loop around a diamond: 0 → 1; 1 → 2 | 3; 2, 3 → 4; 4 → 1 (back edge) | 5; 5 returns.
/// Edges: e0 0→1, e1 1→2, e2 1→3, e3 2→4, e4 3→4, e5 4→1, e6 4→5, e7 5→EXIT, e8 EXIT→0.
/// Spanning tree {e8, e0, e1, e3, e4, e7}; chords e2, e5, e6 carry counters 0, 1, 2.
/// 2 calls, 10 iterations (7 via bb2, 3 via bb3): counters e2 = 3, e5 = 8, e6 = 2; derived e0 = 2, e1 = 7,
/// e3 = 7, e4 = 3, e7 = 2; blocks 2, 10, 7, 3, 10, 2.
fn loop_diamond(name: &str, counter_base: u64) -> FunctionMeta {
    function(name, loop_diamond_cfg(), loop_diamond_chords(), counter_base, 3)
}

/// 0 → 1 → 2 → return; bb1 calls `exit` sometimes (Termination edge).
/// Edges: e0 0→1, e1 1→2, e2 2→EXIT (Return), e3 1→EXIT (Termination), e4 EXIT→0.
/// Spanning tree {e4, e3, e1}; chords e0, e2 carry counters 0, 1. 5 calls, 1 exit(): e0 = 5, e2 = 4; derived
/// e1 = 4, e3 = 1; blocks 5, 5, 4.
fn early_exit(counter_base: u64) -> FunctionMeta {
    function("early_exit", early_exit_cfg(), early_exit_chords(), counter_base, 2)
}

fn function(name: &str, cfg: Cfg, edge_counters: Vec<Option<u32>>, counter_base: u64, n: u32) -> FunctionMeta {
    let f = metadata::function_meta(name, "t.c", cfg, |b| vec![10 + b as u32]);
    let display_name = if name == "early_exit" { "early_exit(int)".into() } else { String::new() };
    FunctionMeta { display_name, edge_counters, counter_base, num_counters: n, ..f }
}

fn meta(module: &str) -> ModuleMeta {
    metadata::module_meta(module, Mode::Edge, vec![loop_diamond("loop_diamond", 0), early_exit(3)])
}

/// One module, counters in the order loop_diamond (e2, e5, e6), early_exit (e0, e2).
fn profile_with(counters: Vec<u64>, flags: u64) -> Profile {
    Profile { modules: vec![ModuleProfile::new(meta("t.c"), counters, vec![], flags, 1)] }
}

fn good_profile() -> Profile {
    profile_with(vec![3, 8, 2, 5, 4], 0)
}

// ---------------------------------------------------------------------------------------------------------------
// Harness

fn assert_ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "stdout:\n{}\nstderr:\n{}", stdout(o), stderr(o));
    assert_eq!(stderr(o), "");
}

fn show_json(path: &Path) -> Value {
    let o = pathprof(&[&"show", &path, &"--json"]);
    assert_ok(&o);
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn counts(v: &Value, key: &str) -> Vec<Value> {
    v[key].as_array().unwrap().iter().map(|x| x["count"].clone()).collect()
}

fn nums(xs: &[u64]) -> Vec<Value> {
    xs.iter().map(|&x| Value::from(x)).collect()
}

// ---------------------------------------------------------------------------------------------------------------
// show

#[test]
fn show_json_has_the_hand_computed_counts() {
    let d = Dir::new();
    let p = d.write_profile("p.pathprof", &good_profile());
    let v = show_json(&p);
    let fs = v["functions"].as_array().unwrap();
    assert_eq!(fs.len(), 2);

    let f = &fs[0];
    assert_eq!(f["name"], "loop_diamond");
    assert_eq!(f["file"], "t.c");
    assert_eq!(f["start_line"], 9);
    assert_eq!(f["module"], "t.c");
    assert_eq!(f["mode"], "edge");
    assert_eq!(f["exact"], true);
    assert_eq!(f["inexact_reasons"], Value::Array(vec![]));
    assert_eq!(f["entry_count"], 2);
    assert_eq!(counts(f, "blocks"), nums(&[2, 10, 7, 3, 10, 2]));
    let blocks = f["blocks"].as_array().unwrap();
    assert_eq!(blocks[3]["id"], 3);
    assert_eq!(blocks[3]["lines"], serde_json::json!([13]));
    // Real edges only: the EXIT→entry edge is not listed.
    assert_eq!(counts(f, "edges"), nums(&[2, 7, 3, 7, 3, 8, 2, 2]));
    let edges = f["edges"].as_array().unwrap();
    let instrumented: Vec<bool> = edges.iter().map(|e| e["instrumented"].as_bool().unwrap()).collect();
    assert_eq!(instrumented, [false, false, true, false, false, true, true, false]);
    assert_eq!(edges[2], serde_json::json!({"from":1,"to":3,"kind":"branch","succ":1,"count":3,"instrumented":true}));
    assert_eq!(edges[7], serde_json::json!({"from":5,"to":6,"kind":"return","count":2,"instrumented":false}));
    assert_eq!(f["abnormal_exits"], serde_json::json!([]));

    let g = &fs[1];
    assert_eq!(g["name"], "early_exit");
    assert_eq!(g["display_name"], "early_exit(int)");
    assert_eq!(g["entry_count"], 5);
    assert_eq!(counts(g, "blocks"), nums(&[5, 5, 4]));
    assert_eq!(counts(g, "edges"), nums(&[5, 4, 4]));
    assert_eq!(g["edges"].as_array().unwrap().len(), 3, "the Termination edge is not a real edge");
    assert_eq!(g["abnormal_exits"], serde_json::json!([{"block": 1, "count": 1}]));
    assert_eq!(g["exact"], true);
}

#[test]
fn show_text_lists_functions_blocks_and_edges() {
    let d = Dir::new();
    let p = d.write_profile("p.pathprof", &good_profile());
    let o = pathprof(&[&"show", &p]);
    assert_ok(&o);
    let out = stdout(&o);
    assert!(out.contains("loop_diamond  t.c:9"), "{out}");
    assert!(out.contains("early_exit(int) [early_exit]  t.c:9"), "{out}");
    assert!(out.contains("entry count: 2"), "{out}");
    assert!(out.contains("entry count: 5"), "{out}");
    let line = |needle: &str| out.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}\n{out}"));
    assert!(line("bb1 -> bb3").contains("count 3 *"), "{out}");
    assert!(line("bb5 -> EXIT").ends_with("count 2"), "{out}");
    // early_exit's bb1 is left abnormally once.
    assert!(
        out.lines().any(|l| l.contains("bb1 ") && l.contains("count 5") && l.contains("abnormal exits 1")),
        "{out}"
    );
    assert!(!out.contains("INEXACT"), "{out}");
}

#[test]
fn show_function_filter() {
    let d = Dir::new();
    let p = d.write_profile("p.pathprof", &good_profile());
    for name in ["early_exit", "early_exit(int)"] {
        let v = show_json_args(&[&"show", &p, &"--json", &"--function", &name]);
        let fs = v["functions"].as_array().unwrap();
        assert_eq!(fs.len(), 1);
        assert_eq!(fs[0]["name"], "early_exit");
    }
    let o = pathprof(&[&"show", &p, &"--function", &"nope"]);
    assert_one_line_error(&o, "no function named nope");
}

fn show_json_args(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Value {
    let o = pathprof(args);
    assert_ok(&o);
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn show_never_executed_functions_with_zero_counts() {
    let d = Dir::new();
    let p = d.write_profile("p.pathprof", &profile_with(vec![0; 5], 0));
    let v = show_json(&p);
    for f in v["functions"].as_array().unwrap() {
        assert_eq!(f["entry_count"], 0);
        assert_eq!(f["exact"], true);
        assert!(counts(f, "blocks").iter().all(|c| c == 0));
        assert!(counts(f, "edges").iter().all(|c| c == 0));
    }
}

#[test]
fn show_marks_inexact_counts_and_never_prints_negatives() {
    let d = Dir::new();
    // loop_diamond with e2 = 20 > the 10 entries of bb1: e1 and e3 derive to -10.
    let p = d.write_profile("p.pathprof", &profile_with(vec![20, 8, 2, 5, 4], 0));
    let v = show_json(&p);
    let f = &v["functions"][0];
    assert_eq!(f["exact"], false);
    let reasons = f["inexact_reasons"].as_array().unwrap();
    assert!(reasons.iter().any(|r| r.as_str().unwrap().contains("negative")), "{reasons:?}");
    assert_eq!(counts(f, "edges")[1], Value::Null);
    assert_eq!(counts(f, "edges")[3], Value::Null);
    assert_eq!(counts(f, "blocks")[2], Value::Null);
    assert_eq!(counts(f, "edges")[2], 20);
    assert_eq!(v["functions"][1]["exact"], true);

    let o = pathprof(&[&"show", &p]);
    assert_ok(&o);
    let out = stdout(&o);
    assert!(out.contains("INEXACT: "), "{out}");
    assert!(out.lines().any(|l| l.contains("bb1 -> bb2") && l.ends_with("count ?")), "{out}");
    assert!(!out.contains("-10"), "{out}");
}

#[test]
fn show_reports_incomplete_runs_as_inexact() {
    let d = Dir::new();
    let p = d.write_profile("p.pathprof", &profile_with(vec![3, 8, 2, 5, 4], layout::RECORD_FLAG_INCOMPLETE));
    let v = show_json(&p);
    for f in v["functions"].as_array().unwrap() {
        assert_eq!(f["exact"], false);
        assert_eq!(f["inexact_reasons"].as_array().unwrap().len(), 1);
    }
    // Counts are still shown: they are a lower bound.
    assert_eq!(v["functions"][0]["entry_count"], 2);
}

/// bb1 holds a setjmp; bb2 calls a function that longjmps back into bb1 (2 of 5 calls). Edges: e0 0→1,
/// e1 1→2, e2 2→EXIT (Return), e3 1→EXIT (Term), e4 2→EXIT (Term), e5 EXIT→0; chords e0 = 5, e1 = 7, e2 = 5;
/// derived e3 = -2 (bb1 re-entered twice), e4 = 2 (bb2 left abnormally twice).
#[test]
fn show_setjmp_reentries_are_exact_but_not_abnormal_exits() {
    let cfg = longjmp_cfg();
    let mut f = function("uses_setjmp", cfg, vec![Some(0), Some(1), Some(2), None, None, None], 0, 3);
    f.reentry_blocks = vec![1];
    let mut m = meta("s.c");
    m.functions = vec![f];
    let d = Dir::new();
    let p =
        d.write_profile("s.pathprof", &Profile { modules: vec![ModuleProfile::new(m, vec![5, 7, 5], vec![], 0, 1)] });
    let v = show_json(&p);
    let f = &v["functions"][0];
    assert_eq!(f["exact"], true);
    assert_eq!(f["entry_count"], 5);
    assert_eq!(counts(f, "blocks"), nums(&[5, 5, 7]));
    assert_eq!(f["abnormal_exits"], serde_json::json!([{"block": 2, "count": 2}]));
    assert_eq!(f["net_reentries"], serde_json::json!([{"block": 1, "count": 2}]));
    let o = pathprof(&[&"show", &p]);
    assert_ok(&o);
    assert!(!stdout(&o).contains("-2"), "{}", stdout(&o));
    assert!(stdout(&o).contains("net setjmp re-entries 2"), "{}", stdout(&o));
}

#[test]
fn show_exits_quietly_on_broken_pipe() {
    // Enough functions for the output to exceed any pipe buffer.
    let mut m = meta("big.c");
    m.functions = (0..3000).map(|i| loop_diamond(&format!("f{i}"), 3 * i)).collect();
    let counters = (0..3000).flat_map(|_| [3, 8, 2]).collect();
    let d = Dir::new();
    let p = d.write_profile("big.pathprof", &Profile { modules: vec![ModuleProfile::new(m, counters, vec![], 0, 1)] });
    let mut child = Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args([Path::new("show"), &p])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

// ---------------------------------------------------------------------------------------------------------------
// merge

#[test]
fn merge_sums_profiles() {
    let d = Dir::new();
    let a = d.write_profile("a.pathprof", &good_profile());
    let b = d.write_profile("b.pathprof", &profile_with(vec![1, 2, 3, 4, 5], layout::RECORD_FLAG_INCOMPLETE));
    let out = d.path("out.pathprof");
    let o = pathprof(&[&"merge", &a, &b, &a, &"-o", &out]);
    assert_ok(&o);
    assert_eq!(stdout(&o), "");
    let merged = profile::read(&std::fs::read(&out).unwrap()).unwrap();
    let m = &merged.modules[0];
    assert_eq!(m.counters, vec![7, 18, 7, 14, 13]);
    assert_eq!(m.runs, 3);
    assert_eq!(m.flags, layout::RECORD_FLAG_INCOMPLETE);
    // No temporary files are left behind.
    assert_eq!(d.entries(), ["a.pathprof", "b.pathprof", "out.pathprof"]);
    // The merged profile shows the summed counts: 2 + 2 + 2 invocations of loop_diamond... plus b's e6 = 3.
    let v = show_json(&out);
    assert_eq!(v["functions"][0]["entry_count"], 7);
}

#[test]
fn merge_replaces_an_existing_output_even_an_input() {
    let d = Dir::new();
    let a = d.write_profile("a.pathprof", &good_profile());
    let o = pathprof(&[&"merge", &a, &a, &"-o", &a]);
    assert_ok(&o);
    let merged = profile::read(&std::fs::read(&a).unwrap()).unwrap();
    assert_eq!(merged.modules[0].counters, vec![6, 16, 4, 10, 8]);
    assert_eq!(d.entries(), ["a.pathprof"]);
}

#[test]
fn merge_refuses_two_builds_of_a_module_and_adds_up_other_modules() {
    let d = Dir::new();
    let a = d.write_profile("a.pathprof", &good_profile());
    // Same module name, different build (functions in another order).
    let mut other = meta("t.c");
    other.functions.reverse();
    other.functions[0].counter_base = 0;
    other.functions[1].counter_base = 2;
    let b =
        d.write_profile("b.pathprof", &Profile { modules: vec![ModuleProfile::new(other, vec![0; 5], vec![], 0, 1)] });
    let out = d.path("out.pathprof");
    let o = pathprof(&[&"merge", &a, &b, &"-o", &out]);
    assert_one_line_error(&o, "different builds of module t.c");
    assert!(!out.exists());
    assert_eq!(d.entries(), ["a.pathprof", "b.pathprof"]);
    // A module only one input has (another program of the build): kept, after the first input's.
    let c = d.write_profile(
        "c.pathprof",
        &Profile { modules: vec![ModuleProfile::new(meta("u.c"), vec![0; 5], vec![], 0, 1)] },
    );
    let o = pathprof(&[&"merge", &a, &c, &"-o", &out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let merged = pathprof_format::profile::read(&std::fs::read(&out).unwrap()).unwrap();
    let names: Vec<&str> = merged.modules.iter().map(|m| m.meta.module_name.as_str()).collect();
    assert_eq!(names, ["t.c", "u.c"]);
}

#[test]
fn merge_refuses_a_corrupt_input() {
    let d = Dir::new();
    let a = d.write_profile("a.pathprof", &good_profile());
    let bad = d.write("bad.pathprof", b"not a profile");
    let out = d.path("out.pathprof");
    let o = pathprof(&[&"merge", &a, &bad, &"-o", &out]);
    assert_one_line_error(&o, "bad.pathprof: not a pathprof profile (bad magic)");
    assert!(!out.exists());
}

// ---------------------------------------------------------------------------------------------------------------
// Errors: exit 2, one line

#[test]
fn unreadable_inputs_are_one_line_errors() {
    let d = Dir::new();
    let good = profile::write(&good_profile());
    let missing = d.path("missing.pathprof");
    let empty = d.write("empty.pathprof", b"");
    let truncated = d.write("truncated.pathprof", &good[..good.len() / 2]);
    let text = d.write("text.pathprof", b"int main() { return 0; }\n");
    let mut v7 = good.clone();
    v7[8..12].copy_from_slice(&7u32.to_le_bytes());
    let version = d.write("v7.pathprof", &v7);
    let cases: [(&Path, &str); 5] = [
        (&missing, "missing.pathprof: No such file or directory"),
        (&empty, "empty.pathprof: empty file: not a pathprof profile"),
        (&truncated, "truncated.pathprof: truncated profile: expected"),
        (&text, "text.pathprof: not a pathprof profile (bad magic)"),
        (&version, "v7.pathprof: unsupported profile version 7 (this pathprof reads version 1)"),
    ];
    for (path, needle) in cases {
        for json in [false, true] {
            let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"show", &path];
            if json {
                args.push(&"--json");
            }
            assert_one_line_error(&pathprof(&args), needle);
        }
        let out = d.path("out.pathprof");
        assert_one_line_error(&pathprof(&[&"merge", &path, &"-o", &out]), needle);
    }
}

#[test]
fn usage_errors_exit_2_with_one_line_and_help_exits_0() {
    let d = Dir::new();
    let p = d.write_profile("p.pathprof", &good_profile());
    assert_one_line_error(&pathprof(&[&"show", &p, &"--frobnicate"]), "--frobnicate");
    assert_one_line_error(&pathprof(&[&"frobnicate"]), "frobnicate");
    assert_one_line_error(&pathprof(&[&"show"]), "FILE");
    assert_one_line_error(&pathprof(&[&"merge", &p]), "--output");
    assert_one_line_error(&pathprof(&[]), "subcommand");
    for args in [&["--help"][..], &["show", "--help"], &["merge", "--help"], &["--version"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_pathprof")).args(args).output().unwrap();
        assert_ok(&o);
        assert!(!stdout(&o).is_empty());
    }
}
