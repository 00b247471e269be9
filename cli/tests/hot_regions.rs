//! `pathprof decode --hot-regions` on the synthetic path profile of `decode.rs` (see `common/mod.rs`).
//!
//! Hand derivation: per function, the positive path counts hottest first (ties by path number), and the smallest
//! prefix whose sum reaches P% of their total (the path executions):
//!
//! | function | paths (number: count) | executions | 90% | 75% | 50% |
//! |---|---|---|---|---|---|
//! | lecture | 5: 7, 0: 3, 2: 1 | 11 | 5 0 (10 ≥ 9.9) | 5 0 (10 ≥ 8.25) | 5 (7 ≥ 5.5) |
//! | loop_diamond, hashed_loop | 5: 3, 4: 2, 1: 1, 3: 1, 7: 1 | 8 | all 5 (8 ≥ 7.2) | 5 4 1 (6 ≥ 6) | 5 4 (5 ≥ 4) |
//! | uses_setjmp | 0: 3, 1: 2, 2: 2 (3: −2 is a re-entry correction) | 7 | 0 1 2 (7 ≥ 6.3) | 0 1 2 | 0 1 (5 ≥ 3.5) |
//! | diamonds | 0: 5, 4: 5, 3: 2, 11: 2 | 14 | all 4 (14 ≥ 12.6) | 0 4 3 (12 ≥ 10.5) | 0 4 (10 ≥ 7) |
//! | never_called | — | 0 | not listed | | |
//! | wide | 2^70−1: 2, 0: 1 | 3 | both (3 ≥ 2.7) | both (3 ≥ 2.25) | 2^70−1 (2 ≥ 1.5) |
//!
//! Loop bodies (end by a back edge into their first block): loop_diamond's paths 5 ↻[1 2 4]↺ and 7 ↻[1 3 4]↺,
//! header bb1. Path 1 [0 1 2 4]↺ ends at the back edge but starts at the entry bb0; path 4 ↻[1 2 4 5] starts at
//! the header but returns: neither is a loop body.

mod common;

use common::*;
use serde_json::{json, Value};

const WIDE_ID: &str = "1180591620717411303423"; // 2^70 - 1

/// (function, [region ids]) in output order.
fn ids(v: &Value) -> Vec<(String, Vec<Value>)> {
    v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let ids = f["regions"].as_array().unwrap().iter().map(|r| r["id"].clone()).collect();
            (f["name"].as_str().unwrap().to_string(), ids)
        })
        .collect()
}

fn row(f: &str, ids: &[u64]) -> (String, Vec<Value>) {
    (f.to_string(), ids.iter().map(|&i| Value::from(i)).collect())
}

fn function<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["functions"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap()
}

fn close(v: &Value, x: f64) -> bool {
    (v.as_f64().unwrap() - x).abs() < 1e-9
}

#[test]
fn hot_regions_cover_the_requested_share_of_each_function() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let wide = |ids: &[&str]| ("wide".to_string(), ids.iter().map(|&i| Value::from(i)).collect::<Vec<_>>());
    let wide_both = wide(&[WIDE_ID]).1.into_iter().chain([Value::from(0)]).collect::<Vec<_>>();

    let v = json(&[&"decode", &"--hot-regions", &"--json", &p]);
    assert_eq!(v["mode"], "path");
    assert_eq!(v["coverage"], 90.0);
    assert_eq!(
        ids(&v),
        [
            row("lecture", &[5, 0]),
            row("loop_diamond", &[5, 4, 1, 3, 7]),
            row("uses_setjmp", &[0, 1, 2]),
            row("diamonds", &[0, 4, 3, 11]),
            row("hashed_loop", &[5, 4, 1, 3, 7]),
            ("wide".to_string(), wide_both.clone()),
        ]
    );

    let v = json(&[&"decode", &"--hot-regions", &"--coverage", &"75", &"--json", &p]);
    assert_eq!(v["coverage"], 75.0);
    assert_eq!(
        ids(&v),
        [
            row("lecture", &[5, 0]),
            row("loop_diamond", &[5, 4, 1]),
            row("uses_setjmp", &[0, 1, 2]),
            row("diamonds", &[0, 4, 3]),
            row("hashed_loop", &[5, 4, 1]),
            ("wide".to_string(), wide_both),
        ]
    );

    let v = json(&[&"decode", &"--hot-regions", &"--coverage=50", &"--json", &p]);
    assert_eq!(
        ids(&v),
        [
            row("lecture", &[5]),
            row("loop_diamond", &[5, 4]),
            row("uses_setjmp", &[0, 1]),
            row("diamonds", &[0, 4]),
            row("hashed_loop", &[5, 4]),
            wide(&[WIDE_ID]),
        ]
    );

    // 100%: every positive path; --top caps the regions per function.
    let v = json(&[&"decode", &"--hot-regions", &"--coverage", &"100", &"--json", &p]);
    assert_eq!(ids(&v)[0], row("lecture", &[5, 0, 2]));
    let v = json(&[&"decode", &"--hot-regions", &"--top", &"1", &"--json", &p]);
    assert!(ids(&v).iter().all(|(_, r)| r.len() == 1), "{v}");
}

#[test]
fn hot_region_fields() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let v = json(&[&"decode", &"--hot-regions", &"--coverage", &"75", &"--json", &p]);

    let f = function(&v, "loop_diamond");
    assert_eq!(f["executed_paths"], 5);
    assert_eq!(f["executions"], 8);
    assert_eq!(f["covered"], 6);
    assert!(close(&f["covered_percent"], 75.0));
    assert_eq!(f["entry_count"], 2);
    assert_eq!(f["exact"], true);
    let r = f["regions"].as_array().unwrap();
    let blocks =
        |r: &Value| r["steps"].as_array().unwrap().iter().map(|s| s["block"].as_u64().unwrap()).collect::<Vec<_>>();
    // #1: path 5, one full iteration through bb2: a loop body with header bb1.
    assert_eq!((&r[0]["rank"], &r[0]["id"], &r[0]["count"]), (&json!(1), &json!(5), &json!(3)));
    assert!(close(&r[0]["percent"], 37.5) && close(&r[0]["cumulative_percent"], 37.5));
    assert_eq!((&r[0]["loop_body"], &r[0]["header"]), (&json!(true), &json!(1)));
    assert_eq!((&r[0]["start"], &r[0]["end"]), (&json!("loop_header"), &json!("back_edge")));
    assert_eq!(r[0]["end_edge"], json!({"from": 4, "to": 1}));
    assert_eq!(blocks(&r[0]), [1, 2, 4]);
    assert_eq!(r[0]["steps"][0], json!({"function": "loop_diamond", "block": 1, "lines": [31]}));
    // #2: path 4 starts at the header but leaves the loop: not a loop body.
    assert_eq!((&r[1]["id"], &r[1]["count"], &r[1]["loop_body"]), (&json!(4), &json!(2), &json!(false)));
    assert!(r[1].get("header").is_none());
    assert!(close(&r[1]["percent"], 25.0) && close(&r[1]["cumulative_percent"], 62.5));
    assert_eq!(blocks(&r[1]), [1, 2, 4, 5]);
    // #3: path 1 ends at the back edge but starts at the entry: not a loop body.
    assert_eq!((&r[2]["id"], &r[2]["loop_body"], &r[2]["start"]), (&json!(1), &json!(false), &json!("entry")));
    assert!(close(&r[2]["cumulative_percent"], 75.0));
    assert_eq!(blocks(&r[2]), [0, 1, 2, 4]);

    // Path 7 (↻[1 3 4]↺) is a loop body too (at 100%).
    let v100 =
        json(&[&"decode", &"--hot-regions", &"--coverage", &"100", &"--json", &"--function", &"loop_diamond", &p]);
    let r7 = v100["functions"][0]["regions"].as_array().unwrap().iter().find(|r| r["id"] == 7).unwrap();
    assert_eq!((&r7["loop_body"], &r7["header"], &r7["rank"]), (&json!(true), &json!(1), &json!(5)));

    // setjmp: the negative re-entry correction is neither an execution nor a region.
    let f = function(&v, "uses_setjmp");
    assert_eq!((&f["executed_paths"], &f["executions"], &f["covered"]), (&json!(4), &json!(7), &json!(7)));
    let r = f["regions"].as_array().unwrap();
    assert!(close(&r[0]["percent"], 300.0 / 7.0));
    assert_eq!(r[1]["end"], "abnormal");

    // Cuts: regions may start after or end at a cut.
    let f = function(&v, "diamonds");
    assert_eq!((&f["executions"], &f["covered"]), (&json!(14), &json!(12)));
    let r = f["regions"].as_array().unwrap();
    assert_eq!((&r[0]["end"], &r[1]["start"], &r[0]["loop_body"]), (&json!("cut"), &json!("after_cut"), &json!(false)));

    // Path numbers beyond u64 are strings, as in decode.
    assert_eq!(function(&v, "wide")["regions"][0]["id"], WIDE_ID);
    // Functions without executions are not listed unless named.
    assert!(v["functions"].as_array().unwrap().iter().all(|f| f["name"] != "never_called"));
    let n = json(&[&"decode", &"--hot-regions", &"--json", &"--function", &"never_called(int)", &p]);
    let f = &n["functions"][0];
    assert_eq!((&f["name"], &f["executions"], &f["regions"]), (&json!("never_called"), &json!(0), &json!([])));
    assert_eq!(f["covered_percent"], 0.0);
}

#[test]
fn hot_regions_text() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    let out = ok(&[&"decode", &"--hot-regions", &"--coverage", &"75", &"--function", &"loop_diamond", &p]);
    assert_eq!(
        out,
        "\
loop_diamond  demo.c:9  (module demo.c, path mode)
  hot regions: 3 of 5 executed paths cover 6 of 8 path executions (75.00%, target 75%)
  #1   count 3           37.50%  cum  37.50%  path 5  (loop body, header bb1)
        bb1    demo.c:31
        bb2    demo.c:32
        bb4    demo.c:34
  #2   count 2           25.00%  cum  62.50%  path 4  (starts at loop header bb1)
        bb1    demo.c:31
        bb2    demo.c:32
        bb4    demo.c:34
        bb5    demo.c:35
  #3   count 1           12.50%  cum  75.00%  path 1  (ends at back edge bb4->bb1)
        bb0    demo.c:30
        bb1    demo.c:31
        bb2    demo.c:32
        bb4    demo.c:34
"
    );
    let out = ok(&[&"decode", &"--hot-regions", &p]);
    assert!(out.starts_with("lecture(int) [lecture]  demo.c:9  (module demo.c, path mode)\n  hot regions: 2 of 3 executed paths cover 10 of 11 path executions (90.91%, target 90%)\n  #1   count 7           63.64%  cum  63.64%  path 5\n"), "{out}");
    assert!(out.contains("\nuses_setjmp  demo.c:9  (module demo.c, path mode)\n  hot regions: 3 of 4 executed paths cover 7 of 7 path executions (100.00%, target 90%)\n"), "{out}");
    assert!(out.contains("  (left abnormally at bb2: exit/longjmp/exception)\n"), "{out}");
    assert!(!out.contains("never_called"), "{out}");
    assert!(!out.contains("re-entry correction"), "{out}");
    let out = ok(&[&"decode", &"--hot-regions", &"--function", &"never_called", &p]);
    assert_eq!(out, "never_called(int) [never_called]  demo.c:9  (module demo.c, path mode)\n  no path executions\n");
}

#[test]
fn hot_regions_of_an_inexact_function_are_flagged() {
    let d = Dir::new();
    let mut f = uses_setjmp();
    f.meta.reentry_blocks.clear();
    let p = d.write_profile("s.pathprof", &pathprof_format::profile::Profile { modules: vec![module("s.c", vec![f])] });
    let v = json(&[&"decode", &"--hot-regions", &"--json", &p]);
    assert_eq!(v["functions"][0]["exact"], false);
    let reasons = v["functions"][0]["inexact_reasons"].as_array().unwrap();
    assert!(reasons.contains(&json!("path 3 counted a negative number of times")), "{reasons:?}");
    assert!(ok(&[&"decode", &"--hot-regions", &p]).contains("\n  INEXACT: path 3 counted a negative number of times"));
}

#[test]
fn hot_region_errors_are_one_line() {
    let d = Dir::new();
    let p = d.write_profile("demo.pathprof", &demo());
    for bad in ["0", "-5", "101", "x"] {
        let o = pathprof(&[&"decode", &"--hot-regions", &format!("--coverage={bad}"), &p]);
        assert_one_line_error(&o, "is not a percentage above 0 and at most 100");
    }
    assert_one_line_error(&pathprof(&[&"decode", &"--coverage", &"50", &p]), "--hot-regions");
    assert_one_line_error(
        &pathprof(&[&"decode", &"--hot-regions", &"--function", &"nope", &p]),
        "no function named nope",
    );
    let e = d.write_profile(
        "e.pathprof",
        &pathprof_format::profile::Profile {
            modules: vec![edge_module("e.c", vec![edge_loop_diamond("f", "e.c", &[])], 0)],
        },
    );
    assert_one_line_error(
        &pathprof(&[&"decode", &"--hot-regions", &e]),
        "e.pathprof is an edge profile: use pathprof show",
    );
}
