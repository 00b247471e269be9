//! Functions the pass cannot instrument are reported as not profiled, in every counting mode: the profile lists
//! them with the pass's reason (`show`, `decode`, `coverage`, `top`, the HTML report), even when a module has no other
//! function, and the rest of the program is profiled exactly. The program's output and exit status are those of
//! the plain build.
//!
//! `left_out_main.c` has `jump_if_odd` (asm goto: LLVM `callbr`, which no mode handles) and `guarded`, which
//! calls setjmp and is profiled in every mode (the interprocedural modes left it out before they put their path
//! state back after a `setjmp`); `left_out_asm.c`'s only function uses asm goto too.

use pathprof_test_suite::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

const SOURCES: [&str; 2] = ["left_out_main.c", "left_out_asm.c"];

/// Builds the program in `mode` at -O2, runs it (as the plain build: "sum 12", exit 0), returns the profile.
fn profile(mode: &str) -> InScratch {
    let dir = scratch(&format!("left-out-{mode}"));
    let exe = dir.join("prog");
    let srcs: Vec<PathBuf> = SOURCES.iter().map(|s| programs().join(s)).collect();
    run_ok(wrapper(false).args(["-O2", "-g"]).args(&srcs).arg("-o").arg(&exe).env("PATHPROF_MODE", mode));
    let prof = dir.join("out.pathprof");
    let _ = std::fs::remove_file(&prof);
    let out = run_ok(Command::new(&exe).env("PATHPROF_FILE", &prof));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 12\n", "{mode}");
    dir.hold(prof)
}

fn pathprof(args: &[&str], profile: &PathBuf) -> String {
    let out = run_ok(Command::new(dist().join("bin/pathprof")).args(args).arg(profile));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// (name, reason, module file name) of every not-profiled function of a report.
fn not_profiled(report: &Value) -> BTreeSet<(String, String, String)> {
    report["not_profiled"]
        .as_array()
        .expect("not_profiled")
        .iter()
        .map(|f| {
            let module = f["module"].as_str().unwrap();
            let module = module.rsplit('/').next().unwrap().to_string();
            (f["name"].as_str().unwrap().to_string(), f["reason"].as_str().unwrap().to_string(), module)
        })
        .collect()
}

/// What the pass must leave out in every mode, by hand: the two asm goto functions (the setjmp caller
/// `guarded` is profiled everywhere).
fn expected() -> BTreeSet<(String, String, String)> {
    let callbr = "`callbr` (asm goto) is not supported".to_string();
    [
        ("jump_if_odd".to_string(), callbr.clone(), "left_out_main.c".to_string()),
        ("asm_only".to_string(), callbr, "left_out_asm.c".to_string()),
    ]
    .into_iter()
    .collect()
}

#[test]
fn left_out_functions_are_listed_and_the_rest_is_exact_in_every_counting_mode() {
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let prof = profile(mode);
        let show = show_json(&prof);
        let want = expected();
        assert_eq!(not_profiled(&show), want, "{mode}: show's not_profiled");
        let profiled: BTreeSet<&str> =
            show["functions"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        let mut want_profiled: BTreeSet<&str> = ["main", "twice", "guarded"].into_iter().collect();
        for (name, _, _) in &want {
            want_profiled.remove(name.as_str());
        }
        assert_eq!(profiled, want_profiled, "{mode}: profiled functions");
        assert!(show["functions"].as_array().unwrap().iter().all(|f| f["exact"] == true), "{mode}: exact");
        assert_markers(&show, &programs().join("left_out_main.c"));

        let text = pathprof(&["show"], &prof);
        let heading = format!("NOT PROFILED: {} functions left uninstrumented when compiled", want.len());
        assert!(text.contains(&heading), "{mode}: show's text lacks `{heading}`:\n{text}");
        assert!(text.contains("asm_only  ") && text.contains("left_out_asm.c:2"), "{mode}: {text}");

        let coverage: Value = serde_json::from_str(&pathprof(&["coverage", "--json"], &prof)).unwrap();
        assert_eq!(not_profiled(&coverage), want, "{mode}: coverage's not_profiled");
        if !matches!(mode, "edge" | "block") {
            let decode: Value = serde_json::from_str(&pathprof(&["decode", "--json"], &prof)).unwrap();
            assert_eq!(not_profiled(&decode), want, "{mode}: decode's not_profiled");
            assert!(pathprof(&["decode"], &prof).contains(&heading), "{mode}: decode's text");
            let top: Value = serde_json::from_str(&pathprof(&["top", "--json"], &prof)).unwrap();
            assert_eq!(not_profiled(&top), want, "{mode}: top's not_profiled");
        }
        let html = prof.with_file_name("html");
        run_ok(Command::new(dist().join("bin/pathprof")).args(["report", "--html", "-o"]).arg(&html).arg(&prof));
        let index = std::fs::read_to_string(html.join("index.html")).unwrap();
        assert!(index.contains(&format!("Not profiled ({})", want.len())), "{mode}: the HTML index");
    }
}

/// Trace mode lists the functions it left untraced (`trace --summary`'s `not_traced`), a module with none traced
/// included, and the rest of the trace is complete.
#[test]
fn trace_mode_lists_the_functions_it_left_untraced() {
    let dir = scratch("left-out-trace");
    let exe = dir.join("prog");
    let srcs: Vec<PathBuf> = SOURCES.iter().map(|s| programs().join(s)).collect();
    run_ok(wrapper(false).args(["-O2", "-g"]).args(&srcs).arg("-o").arg(&exe).env("PATHPROF_MODE", "trace"));
    let trace = dir.join("out.pathtrace");
    let _ = std::fs::remove_file(&trace);
    let out = run_ok(Command::new(&exe).env("PATHPROF_TRACE", &trace));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 12\n");
    let summary: Value = serde_json::from_str(&pathprof(&["trace", "--summary", "--json"], &trace)).unwrap();
    let mut not_traced = summary.clone();
    not_traced["not_profiled"] = summary["not_traced"].clone();
    assert_eq!(not_profiled(&not_traced), expected());
    assert!(summary["threads"].as_array().unwrap().iter().all(|t| t["status"] == "complete"), "{summary}");
}

/// `--function` naming a left-out function is an answer (exit 0, nothing counted, why), not "no such function".
#[test]
fn a_left_out_function_can_be_asked_for_by_name() {
    let prof = profile("path");
    let out = pathprof(&["show", "--json", "--function", "asm_only"], &prof);
    let show: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(show["functions"].as_array().unwrap().len(), 0);
    assert_eq!(not_profiled(&show).len(), 1);
    let decode = pathprof(&["decode", "--function", "jump_if_odd"], &prof);
    assert!(decode.contains("NOT PROFILED: 1 function left uninstrumented"), "{decode}");
    let missing = Command::new(dist().join("bin/pathprof"))
        .args(["show", "--function", "no_such_function"])
        .arg(&prof)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2), "an unknown name is still an error");
}

/// Merging keeps the list: the merged profile still says which functions ran uncounted.
#[test]
fn merged_profiles_keep_the_left_out_functions() {
    let prof = profile("context");
    let merged = prof.with_file_name("merged.pathprof");
    run_ok(Command::new(dist().join("bin/pathprof")).arg("merge").arg("-o").arg(&merged).arg(&prof).arg(&prof));
    assert_eq!(not_profiled(&show_json(&merged)), expected());
}

/// One build and run of `source` for the tests below: built in `mode` at `opt` with `flags`, run, its output
/// checked against `stdout`; returns the compiler's stderr and the functions reported left out as
/// (linkage name, display name, reason) — trace mode's `not_traced` (every thread complete), or `show`'s
/// `not_profiled` (every function exact; with `markers`, the source's markers hold).
fn left_out_in(
    source: &str,
    mode: &str,
    opt: &str,
    flags: &[&str],
    stdout: &str,
    markers: bool,
) -> (String, Vec<[String; 3]>) {
    let what = format!("{source} {mode} {opt} {flags:?}");
    let dir = scratch(&format!("left-out-{source}"));
    let path = programs().join(source);
    let exe = dir.join("prog");
    let built = run_ok(
        wrapper(source.ends_with(".cpp"))
            .args([opt, "-g"])
            .args(flags)
            .arg(&path)
            .arg("-o")
            .arg(&exe)
            .env("PATHPROF_MODE", mode),
    );
    let (prof, trace) = (dir.join("out.pathprof"), dir.join("out.pathtrace"));
    let out = run_ok(Command::new(&exe).env("PATHPROF_FILE", &prof).env("PATHPROF_TRACE", &trace));
    assert_eq!(String::from_utf8_lossy(&out.stdout), stdout, "{what}");
    let (report, key) = if mode == "trace" {
        let summary: Value = serde_json::from_str(&pathprof(&["trace", "--summary", "--json"], &trace)).unwrap();
        assert!(summary["threads"].as_array().unwrap().iter().all(|t| t["status"] == "complete"), "{what}: {summary}");
        (summary, "not_traced")
    } else {
        let show = show_json(&prof);
        assert!(show["functions"].as_array().unwrap().iter().all(|f| f["exact"] == true), "{what}: {show}");
        if markers {
            assert_markers(&show, &path);
        }
        (show, "not_profiled")
    };
    let field = |f: &Value, k: &str| f[k].as_str().unwrap_or("").to_string();
    let mut left: Vec<[String; 3]> = report[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| [field(f, "name"), field(f, "display_name"), field(f, "reason")])
        .collect();
    left.sort();
    (String::from_utf8_lossy(&built.stderr).into_owned(), left)
}

/// C++20 coroutines: a generator (coroutine.cpp, one of its runs abandoned while suspended) and tasks
/// (coroutine_task.cpp: symmetric transfer, exceptions carried to the awaiting coroutine, an `await_suspend` that
/// resumes the coroutine itself while the suspending activation is still in it). LLVM splits a coroutine into
/// ramp, resume and destroy functions after the pass ran, and each resumption enters the body right after the
/// suspension it left — a second return of the suspension, as of a `setjmp`. Edge and block modes count them:
/// none left out, every function exact, the hand counts of the markers, at -O0 and -O2 (before, edge mode left
/// them out too). Path, context, piecewise and trace modes leave the coroutines out with the reason, and the rest
/// is exact (trace: complete). Output as the plain build's. Use mode annotates every function, coroutines
/// included, from the edge profile.
#[test]
fn coroutines_are_counted_in_edge_and_block_modes() {
    let cases =
        [("coroutine.cpp", "456\n", &["numbers"][..]), ("coroutine_task.cpp", "5477\n", &["leaf", "middle", "top"])];
    for (source, stdout, coroutines) in cases {
        for opt in ["-O0", "-O2"] {
            for mode in ["edge", "block", "path", "context", "piecewise", "trace"] {
                let counted = matches!(mode, "edge" | "block");
                let (_, left) = left_out_in(source, mode, opt, &["-std=c++20"], stdout, counted);
                let what = format!("{source} {mode} {opt}: {left:?}");
                if counted {
                    assert!(left.is_empty(), "{what}");
                    continue;
                }
                let mut names: Vec<&str> = left.iter().map(|l| l[1].split('(').next().unwrap()).collect();
                names.sort();
                assert_eq!(names, coroutines, "{what}");
                assert!(left.iter().all(|l| l[2].contains("C++20 coroutine")), "{what}");
            }
        }
        // Use mode takes the edge profile's counts for every function, the coroutines included.
        let dir = scratch("coroutine-use");
        let (exe, prof) = (dir.join("prof"), dir.join("edge.pathprof"));
        let src = programs().join(source);
        run_ok(wrapper(true).args(["-O2", "-std=c++20", "--pathprof-mode=edge"]).arg(&src).arg("-o").arg(&exe));
        run_ok(Command::new(&exe).env("PATHPROF_FILE", &prof));
        let built = run_ok(
            wrapper(true)
                .args(["-O2", "-std=c++20", "-c", "--pathprof-stats"])
                .arg(format!("--pathprof-use={}", prof.display()))
                .arg(&src)
                .arg("-o")
                .arg(dir.join("use.o")),
        );
        let err = String::from_utf8_lossy(&built.stderr);
        assert!(err.contains("mismatched=0 missing=0 inexact=0") && !err.contains("annotated=0"), "{source}: {err}");
    }
}

/// A naked function (naked.c) is left out in every mode, listed with its reason: anything added to it would use
/// registers and stack its assembly owns (piecewise mode at -O0 printed garbage). A function marked
/// `no_profile_instrument_function` is left out as the user asked (listed, without the compile-time warning).
/// The rest is exact.
#[test]
fn naked_and_no_profile_functions_are_left_out() {
    for opt in ["-O0", "-O2"] {
        for mode in ["edge", "block", "path", "context", "piecewise", "trace"] {
            let (stderr, left) = left_out_in("naked.c", mode, opt, &[], "27 2\n", true);
            assert_eq!(stderr.matches("uninstrumented").count(), 1, "{mode} {opt}: {stderr}");
            assert_eq!(left.len(), 2, "{mode} {opt}: {left:?}");
            assert!(left[0][0] == "add1" && left[0][2].contains("naked"), "{left:?}");
            assert!(left[1][0] == "quiet" && left[1][2].contains("no_profile_instrument_function"), "{left:?}");
        }
    }
}

/// An `ifunc` resolver (ifunc.c) runs while the program is loaded — in a static program before thread-local
/// storage exists. Trace mode leaves it (and what it calls) untraced, listed: before, the static program
/// crashed and the dynamic one's trace read as corrupt. The counting modes count it (plain global counters).
/// Dynamic and static, -O0 and -O2: output as plain, the rest exact or complete.
#[test]
fn ifunc_resolvers_run_before_trace_state_exists() {
    for link in ["-no-pie", "-static"] {
        for opt in ["-O0", "-O2"] {
            for mode in ["edge", "path", "context", "trace"] {
                let (_, left) = left_out_in("ifunc.c", mode, opt, &[link], "15\n", true);
                let names: Vec<&str> = left.iter().map(|l| l[0].as_str()).collect();
                let want: &[&str] = if mode == "trace" { &["resolve"] } else { &[] };
                assert_eq!(names, want, "{mode} {opt} {link}");
            }
        }
    }
}
