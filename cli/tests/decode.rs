//! End-to-end tests of `pathprof decode` (and of `show`/`merge` on path-mode profiles) on synthetic profiles.
//!
//! Path counts are produced by simulating executions through core's DAG and numbering exactly as the pass
//! instruments them; the expected paths, counts and marks are derived by hand from the executions described at
//! each fixture.
mod common;

use common::*;
use pathprof_core::graph::test_cfg;
use pathprof_format::meta::{FunctionMeta, Mode, PathStorage};
use pathprof_format::profile::{ModuleProfile, Profile};
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

/// One edge-mode function: bb0 returns (e0, counter 0), EXIT→bb0 (e1, tree edge).
fn edge_profile() -> Profile {
    let cfg = test_cfg(1, &[], &[0]);
    let f = metadata::function_meta("main", "e.c", cfg, |_| vec![2]);
    let f = FunctionMeta { start_line: 1, edge_counters: vec![Some(0), None], num_counters: 1, ..f };
    let meta = metadata::module_meta("e.c", Mode::Edge, vec![f]);
    Profile { modules: vec![ModuleProfile::new(meta, vec![4], vec![], 0, 1)] }
}

fn listed(v: &Value) -> Vec<(String, Value, i64)> {
    v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["function"].as_str().unwrap().to_string(), p["id"].clone(), p["count"].as_i64().unwrap()))
        .collect()
}

fn row(f: &str, id: u64, count: i64) -> (String, Value, i64) {
    (f.to_string(), Value::from(id), count)
}

fn find<'a>(v: &'a Value, function: &str, id: u64) -> &'a Value {
    v["paths"].as_array().unwrap().iter().find(|p| p["function"] == function && p["id"] == id).unwrap()
}

const WIDE_ID: &str = "1180591620717411303423"; // 2^70 - 1

// ---------------------------------------------------------------------------------------------------------------
// decode --json

#[test]
fn decode_json_lists_every_path_by_function_then_hottest_first() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let v = json(&[&"decode", &p, &"--json"]);
    assert_eq!(v["mode"], "path");
    let mut expected = vec![
        row("lecture", 5, 7),
        row("lecture", 0, 3),
        row("lecture", 2, 1),
        row("loop_diamond", 5, 3),
        row("loop_diamond", 4, 2),
        row("loop_diamond", 1, 1),
        row("loop_diamond", 3, 1),
        row("loop_diamond", 7, 1),
        row("uses_setjmp", 0, 3),
        row("uses_setjmp", 1, 2),
        row("uses_setjmp", 2, 2),
        row("uses_setjmp", 3, -2),
        row("diamonds", 0, 5),
        row("diamonds", 4, 5),
        row("diamonds", 3, 2),
        row("diamonds", 11, 2),
        row("hashed_loop", 5, 3),
        row("hashed_loop", 4, 2),
        row("hashed_loop", 1, 1),
        row("hashed_loop", 3, 1),
        row("hashed_loop", 7, 1),
    ];
    expected.push(("wide".into(), Value::from(WIDE_ID), 2));
    expected.push(row("wide", 0, 1));
    assert_eq!(listed(&v), expected);

    // ABDEF: its blocks with their lines, from the entry to the return.
    let p5 = find(&v, "lecture", 5);
    let steps = json!([
        {"function": "lecture", "block": 0, "lines": [10, 11]},
        {"function": "lecture", "block": 1, "lines": [12]},
        {"function": "lecture", "block": 3, "lines": [16]},
        {"function": "lecture", "block": 4, "lines": [17, 19]},
        {"function": "lecture", "block": 5, "lines": [20]},
    ]);
    assert_eq!(p5["steps"], steps);
    assert_eq!(p5["start"], "entry");
    assert_eq!(p5["end"], "exit");
    assert_eq!(p5["context_steps"], 0);
    assert_eq!(p5["module"], "demo.c");
    assert_eq!(p5["file"], "demo.c");
    assert_eq!(p5["rank"], 1);
    assert!((p5["percent"].as_f64().unwrap() - 700.0 / 11.0).abs() < 1e-9);
    assert_eq!(p5["reentry_correction"], false);
    assert!(p5.get("start_edge").is_none() && p5.get("end_edge").is_none());

    // Loop paths: from the header bb1 after the back edge bb4->bb1, and/or ending by taking it.
    let l5 = find(&v, "loop_diamond", 5);
    assert_eq!((&l5["start"], &l5["end"]), (&json!("loop_header"), &json!("back_edge")));
    assert_eq!(l5["start_edge"], json!({"from": 4, "to": 1}));
    assert_eq!(l5["end_edge"], json!({"from": 4, "to": 1}));
    let blocks =
        |p: &Value| p["steps"].as_array().unwrap().iter().map(|s| s["block"].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!(blocks(l5), [1, 2, 4]);
    let l1 = find(&v, "loop_diamond", 1);
    assert_eq!((&l1["start"], &l1["end"]), (&json!("entry"), &json!("back_edge")));
    assert_eq!(blocks(l1), [0, 1, 2, 4]);
    let l4 = find(&v, "loop_diamond", 4);
    assert_eq!((&l4["start"], &l4["end"]), (&json!("loop_header"), &json!("exit")));
    assert_eq!(blocks(l4), [1, 2, 4, 5]);
    assert_eq!(blocks(find(&v, "loop_diamond", 7)), [1, 3, 4]);

    // Abnormal ends: bb2's call longjmp'd twice; the setjmp block bb1's termination path is a correction.
    let s1 = find(&v, "uses_setjmp", 1);
    assert_eq!(s1["end"], "abnormal");
    assert_eq!(blocks(s1), [0, 1, 2]);
    assert_eq!(s1["reentry_correction"], false);
    let s3 = find(&v, "uses_setjmp", 3);
    assert_eq!(s3["end"], "abnormal");
    assert_eq!(blocks(s3), [0, 1]);
    assert_eq!(s3["reentry_correction"], true);
    assert_eq!(s3["rank"], 4);

    // Cuts.
    let c0 = find(&v, "diamonds", 0);
    assert_eq!((&c0["start"], &c0["end"]), (&json!("entry"), &json!("cut")));
    assert_eq!(c0["end_edge"], json!({"from": 3, "to": 4}));
    assert_eq!(blocks(c0), [0, 1, 3]);
    let c4 = find(&v, "diamonds", 4);
    assert_eq!((&c4["start"], &c4["end"]), (&json!("after_cut"), &json!("exit")));
    assert_eq!(c4["start_edge"], json!({"from": 3, "to": 4}));
    assert_eq!(blocks(c4), [4, 6, 7, 9, 10, 12]);
    assert_eq!(blocks(find(&v, "diamonds", 11)), [5, 6, 8, 9, 11, 12]);

    // Blocks without debug info have no lines.
    assert_eq!(find(&v, "hashed_loop", 5)["steps"][0], json!({"function": "hashed_loop", "block": 1, "lines": []}));

    // A path number beyond u64 is a decimal string.
    let w = v["paths"].as_array().unwrap().iter().find(|p| p["id"] == WIDE_ID).unwrap();
    assert_eq!(w["steps"].as_array().unwrap().len(), 141, "two blocks per diamond and the last head");

    // Function summaries, the never-called function included.
    let fs = v["functions"].as_array().unwrap();
    assert_eq!(fs.len(), 7);
    assert_eq!(fs[0]["name"], "lecture");
    assert_eq!(fs[0]["display_name"], "lecture(int)");
    assert_eq!(fs[0]["num_paths"], 6);
    assert_eq!(fs[0]["executed_paths"], 3);
    assert_eq!(fs[0]["total_count"], 11);
    assert_eq!(fs[0]["entry_count"], 11);
    assert_eq!(fs[0]["exact"], true);
    assert_eq!(fs[2]["total_count"], 5);
    assert_eq!(fs[2]["exact"], true);
    assert_eq!(fs[5]["name"], "never_called");
    assert_eq!(fs[5]["executed_paths"], 0);
    assert_eq!(fs[6]["num_paths"], "1180591620717411303424");
}

#[test]
fn decode_json_top_and_function() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let v = json(&[&"decode", &p, &"--json", &"--top", &"2"]);
    let ids: Vec<(String, Value)> = listed(&v).into_iter().map(|(f, id, _)| (f, id)).collect();
    let e = |f: &str, id: u64| (f.to_string(), Value::from(id));
    assert_eq!(
        ids,
        [
            e("lecture", 5),
            e("lecture", 0),
            e("loop_diamond", 5),
            e("loop_diamond", 4),
            e("uses_setjmp", 0),
            e("uses_setjmp", 1),
            e("diamonds", 0),
            e("diamonds", 4),
            e("hashed_loop", 5),
            e("hashed_loop", 4),
            ("wide".into(), Value::from(WIDE_ID)),
            e("wide", 0),
        ]
    );
    assert_eq!(v["functions"][0]["listed_paths"], 2);
    assert_eq!(v["functions"][0]["executed_paths"], 3);

    for name in ["lecture", "lecture(int)"] {
        let v = json(&[&"decode", &p, &"--json", &"--function", &name]);
        assert_eq!(listed(&v), [row("lecture", 5, 7), row("lecture", 0, 3), row("lecture", 2, 1)]);
        assert_eq!(v["functions"].as_array().unwrap().len(), 1);
    }
    let v = json(&[&"decode", &p, &"--json", &"--function", &"loop_diamond", &"--top", &"0"]);
    assert_eq!(v["paths"], json!([]));
    assert_eq!(v["functions"][0]["executed_paths"], 5);
}

// ---------------------------------------------------------------------------------------------------------------
// decode (text)

#[test]
fn decode_text_shows_hot_paths_with_source_lines() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let out = ok(&[&"decode", &p]);
    let lecture = "\
lecture(int) [lecture]  demo.c:9  (module demo.c, path mode)
  executed paths: 3 of 6, total count 11
  #1   count 7           63.64%  path 5
        bb0    demo.c:10-11
        bb1    demo.c:12
        bb3    demo.c:16
        bb4    demo.c:17,19
        bb5    demo.c:20
  #2   count 3           27.27%  path 0
        bb0    demo.c:10-11
        bb2    demo.c:13-15
        bb3    demo.c:16
        bb5    demo.c:20
  #3   count 1            9.09%  path 2
        bb0    demo.c:10-11
        bb1    demo.c:12
        bb2    demo.c:13-15
        bb3    demo.c:16
        bb5    demo.c:20
";
    assert!(out.starts_with(lecture), "{out}");
    let line = |needle: &str| out.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}\n{out}"));
    // Loop paths.
    assert!(line("executed paths: 5 of 8, total count 8").starts_with("  "), "{out}");
    assert_eq!(
        line("37.50%  path 5"),
        "  #1   count 3           37.50%  path 5  (starts at loop header bb1; ends at back edge bb4->bb1)"
    );
    // Re-entry corrections.
    assert_eq!(
        line("count -2"),
        "  #4   count -2               -  path 3  (re-entry correction: setjmp block bb1 re-entered by longjmp)"
    );
    // How paths start and end: at loops, abnormally, at cuts.
    for (needle, ending) in [
        ("path 1 ", "(ends at back edge bb4->bb1)"),
        ("path 4 ", "(starts at loop header bb1)"),
        ("path 1  (left", "(left abnormally at bb2: exit/longjmp/exception)"),
        ("path 0  (ends at a cut", "(ends at a cut bb3->bb4)"),
        ("path 4  (starts after", "(starts after a cut at bb4)"),
    ] {
        assert!(line(needle).ends_with(ending), "{needle}: {out}");
    }
    // No line info; the never-called function is summarised; the wide function's id.
    assert!(out.contains("        bb1    (no line info)\n"), "{out}");
    assert!(out.contains(&format!("path {WIDE_ID}")), "{out}");
    assert!(out.contains("executed paths: 2 of 1180591620717411303424, total count 3"), "{out}");
    assert!(!out.contains("never_called"), "{out}");
    assert!(out.ends_with("\n(1 function without executed paths not shown)\n"), "{out}");
    assert!(!out.contains("INEXACT"), "{out}");
}

#[test]
fn decode_text_defaults_to_the_ten_hottest() {
    // 12 distinct paths of the lecture-less diamonds(4), uncut: 16 paths; run 12 of them with counts 1..=12.
    let cfg = diamonds_cfg(4);
    let mut events = Vec::new();
    for r in 0..12u32 {
        // Path number r: bit (3 - i) of r picks the second branch of diamond i.
        let walk: Vec<u32> = (0..4)
            .flat_map(|i| if r >> (3 - i) & 1 == 1 { [4 * i + 1, 4 * i + 3] } else { [4 * i, 4 * i + 2] })
            .chain([16])
            .collect();
        events.push((i64::from(r) + 1, walk));
    }
    let f = fixture("many", cfg, BIG, PathStorage::Dense, &[], &events);
    assert_eq!(f.counts.len(), 12);
    assert!(f.counts.iter().all(|(&r, &c)| c == r as i64 + 1), "{:?}", f.counts);
    let d = Dir::new();
    let p = d.write_profile("many.pathprof", &Profile { modules: vec![module("m.c", vec![f])] });
    let out = ok(&[&"decode", &p]);
    assert!(out.contains("executed paths: 12 of 16, total count 78 (showing the 10 hottest)"), "{out}");
    let ranks: Vec<&str> = out.lines().filter(|l| l.starts_with("  #")).collect();
    assert_eq!(ranks.len(), 10);
    assert!(ranks[0].starts_with("  #1   count 12 ") && ranks[0].ends_with("path 11"), "{out}");
    assert!(ranks[9].starts_with("  #10  count 3 ") && ranks[9].ends_with("path 2"), "{out}");
    let out = ok(&[&"decode", &p, &"--top", &"3"]);
    assert_eq!(out.lines().filter(|l| l.starts_with("  #")).count(), 3);
    let v = json(&[&"decode", &p, &"--json"]);
    assert_eq!(v["paths"].as_array().unwrap().len(), 12, "JSON lists every path unless --top is given");
}

#[test]
fn decode_selected_unexecuted_function_is_shown() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let out = ok(&[&"decode", &p, &"--function", &"never_called"]);
    assert_eq!(
        out,
        "never_called(int) [never_called]  demo.c:9  (module demo.c, path mode)\n  executed paths: 0 of 6, total count 0\n"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// decode errors: exit 2, one line

#[test]
fn decode_errors_are_one_line() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    assert_one_line_error(&pathprof(&[&"decode", &p, &"--function", &"nope"]), "no function named nope in ");
    let e = d.write_profile("e.pathprof", &edge_profile());
    for json in [false, true] {
        let mut args: Vec<&dyn AsRef<OsStr>> = vec![&"decode", &e];
        if json {
            args.push(&"--json");
        }
        let o = pathprof(&args);
        assert_one_line_error(&o, "e.pathprof is an edge profile: use pathprof show");
    }
    let bad = d.path("bad.pathprof");
    std::fs::write(&bad, b"not a profile").unwrap();
    assert_one_line_error(&pathprof(&[&"decode", &bad]), "bad.pathprof: not a pathprof profile (bad magic)");
    assert_one_line_error(&pathprof(&[&"decode"]), "FILE");
    assert_one_line_error(&pathprof(&[&"decode", &p, &"--top", &"x"]), "--top");
    assert_one_line_error(&pathprof(&[&"decode", &p, &"--top", &"-1"]), "");
    let o = Command::new(env!("CARGO_BIN_EXE_pathprof")).args(["decode", "--help"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("--top"));
}

fn corrupt(d: &Dir, name: &str, edit: impl FnOnce(&mut Vec<Fixture>)) -> PathBuf {
    let mut fs = vec![lecture("lecture", true), loop_diamond("hashed_loop", PathStorage::Hashed { table: 0 }, true)];
    edit(&mut fs);
    d.write_profile(name, &Profile { modules: vec![module("demo.c", fs)] })
}

#[test]
fn corrupt_path_data_is_exit_2_for_decode_and_show() {
    let d = Dir::new();
    // 9 recorded paths (and 9 dense counters) where the graph and budget give 6.
    let mismatch = corrupt(&d, "mismatch.pathprof", |fs| {
        fs[0].meta.path.as_mut().unwrap().num_paths = 9;
    });
    let needle = "mismatch.pathprof: corrupt profile: function lecture of module demo.c records 9 paths, but its graph and budget give 6";
    assert_one_line_error(&pathprof(&[&"decode", &mismatch]), needle);
    assert_one_line_error(&pathprof(&[&"decode", &mismatch, &"--json"]), needle);
    assert_one_line_error(&pathprof(&[&"show", &mismatch]), needle);
    assert_one_line_error(&pathprof(&[&"show", &mismatch, &"--json"]), needle);
    assert!(stderr(&pathprof(&[&"decode", &mismatch])).starts_with("pathprof: error: decoding "));
}

#[test]
fn a_path_count_out_of_range_flags_its_function_and_the_rest_is_shown() {
    let d = Dir::new();
    // A hashed path number beyond the function's 8 paths, in an intact file.
    let out_of_range = corrupt(&d, "range.pathprof", |fs| {
        fs[1].counts.insert(8, 1);
    });
    let o = pathprof(&[&"show", &"--json", &out_of_range]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let f = |name: &str| v["functions"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap().clone();
    assert_eq!(f("lecture")["exact"], true, "the other function is untouched");
    let bad = f("hashed_loop");
    assert_eq!(bad["exact"], false);
    assert_eq!(bad["inexact_reasons"][0], "a count for path 8, but only 8 paths (left out)");
    assert!(bad["blocks"].as_array().unwrap().iter().all(|b| b["count"].is_u64()), "the in-range counts are shown");
    let o = pathprof(&[&"decode", &out_of_range]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

// ---------------------------------------------------------------------------------------------------------------
// show and merge on path-mode profiles

#[test]
fn show_derives_counts_from_paths() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let v = json(&[&"show", &p, &"--json"]);
    let fs = v["functions"].as_array().unwrap();
    let counts =
        |f: &Value, key: &str| f[key].as_array().unwrap().iter().map(|x| x["count"].clone()).collect::<Vec<_>>();
    let nums = |xs: &[u64]| xs.iter().map(|&x| Value::from(x)).collect::<Vec<_>>();

    let f = &fs[0];
    assert_eq!(f["name"], "lecture");
    assert_eq!(f["mode"], "path");
    assert_eq!(f["exact"], true);
    assert_eq!(f["entry_count"], 11);
    assert_eq!(counts(f, "blocks"), nums(&[11, 8, 4, 11, 7, 11]));
    assert_eq!(counts(f, "edges"), nums(&[3, 8, 1, 7, 4, 4, 7, 7, 11]));
    let instrumented: Vec<bool> =
        f["edges"].as_array().unwrap().iter().map(|e| e["instrumented"].as_bool().unwrap()).collect();
    assert_eq!(instrumented, [true, false, true, true, false, true, false, true, false]);

    // The loop: 2 calls, 8 iterations (6 through bb2), the back edge taken 6 times.
    let f = &fs[1];
    assert_eq!(f["entry_count"], 2);
    assert_eq!(counts(f, "blocks"), nums(&[2, 8, 6, 2, 8, 2]));
    assert_eq!(counts(f, "edges"), nums(&[2, 6, 2, 6, 2, 6, 2, 2]));
    assert_eq!(fs[4]["name"], "hashed_loop");
    assert_eq!(counts(&fs[4], "edges"), counts(f, "edges"));

    // setjmp: bb2 left abnormally twice, bb1 re-entered twice; every count exact and non-negative.
    let f = &fs[2];
    assert_eq!(f["exact"], true);
    assert_eq!(f["entry_count"], 5);
    assert_eq!(counts(f, "blocks"), nums(&[5, 5, 5, 5]));
    assert_eq!(counts(f, "edges"), nums(&[5, 5, 2, 3, 5]));
    assert_eq!(f["abnormal_exits"], json!([{"block": 2, "count": 2}]));
    assert_eq!(f["net_reentries"], json!([{"block": 1, "count": 2}]));

    // Cuts: edges of the cut vertex are counted like any other.
    let f = &fs[3];
    assert_eq!(f["entry_count"], 7);
    assert_eq!(counts(f, "blocks"), nums(&[7, 5, 2, 7, 5, 2, 7, 5, 2, 7, 5, 2, 7]));
    assert_eq!(fs[5]["entry_count"], 0);
    assert_eq!(fs[6]["entry_count"], 3);

    let out = ok(&[&"show", &p]);
    assert!(out.contains("lecture(int) [lecture]  demo.c:9  (module demo.c, path mode)"), "{out}");
    assert!(out.contains("  edges (* = instrumented):"), "{out}");
    assert!(out.contains("net setjmp re-entries 2"), "{out}");
    assert!(!out.contains("INEXACT"), "{out}");
    assert!(!out.contains("-2"), "{out}");
}

#[test]
fn show_path_profile_with_unexplained_negative_path_is_inexact() {
    let d = Dir::new();
    let mut f = uses_setjmp();
    f.meta.reentry_blocks.clear();
    let p = d.write_profile("s.pathprof", &Profile { modules: vec![module("s.c", vec![f])] });
    let v = json(&[&"show", &p, &"--json"]);
    let f = &v["functions"][0];
    assert_eq!(f["exact"], false);
    let reasons: Vec<&str> = f["inexact_reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(reasons.contains(&"path 3 counted a negative number of times"), "{reasons:?}");
    let v = json(&[&"decode", &p, &"--json"]);
    assert_eq!(v["functions"][0]["exact"], false);
    assert_eq!(find(&v, "uses_setjmp", 3)["reentry_correction"], false);
    let out = ok(&[&"decode", &p]);
    assert!(out.contains("  INEXACT: path 3 counted a negative number of times"), "{out}");
    assert!(out.contains("(left abnormally at bb1: exit/longjmp/exception)"), "{out}");
}

#[test]
fn merge_adds_path_counts_with_wrapping() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let out = d.path("sum.pathprof");
    ok(&[&"merge", &p, &p, &p, &"-o", &out]);
    let v = json(&[&"decode", &out, &"--json", &"--function", &"uses_setjmp"]);
    // −2 three times is −6 (as u64, 2^64 − 2 three times would overflow a checked sum).
    assert_eq!(
        listed(&v),
        [row("uses_setjmp", 0, 9), row("uses_setjmp", 1, 6), row("uses_setjmp", 2, 6), row("uses_setjmp", 3, -6)]
    );
    let v = json(&[&"show", &out, &"--json", &"--function", &"uses_setjmp"]);
    assert_eq!(v["functions"][0]["exact"], true);
    assert_eq!(v["functions"][0]["entry_count"], 15);
    assert_eq!(v["functions"][0]["net_reentries"], json!([{"block": 1, "count": 6}]));
    let v = json(&[&"decode", &out, &"--json", &"--function", &"hashed_loop"]);
    assert_eq!(listed(&v)[0], row("hashed_loop", 5, 9));
}
