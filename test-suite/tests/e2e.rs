//! End-to-end: real clang-19 + libpathprof.so + libpathprof_rt.a + `pathprof show --json`, checked against
//! hand-derived counts (`// expect: N` markers) and clang's own instrumentation (entry counts).

use pathprof_test_suite::*;
use std::path::PathBuf;
use std::process::Command;

/// Compiles `sources` with the wrapper at `opt`, runs the program, returns the parsed `show --json`.
fn profile_of(name: &str, sources: &[&str], opt: &str, env: &[(&str, &str)], extra: &[&str]) -> serde_json::Value {
    let dir = scratch(name);
    let cxx = sources.iter().any(|s| s.ends_with(".cpp"));
    let exe = dir.join("prog");
    let srcs: Vec<PathBuf> = sources.iter().map(|s| programs().join(s)).collect();
    let mut cc = wrapper(cxx);
    cc.arg(opt).args(&srcs).args(extra).arg("-o").arg(&exe);
    for (k, v) in env {
        cc.env(k, v);
    }
    run_ok(&mut cc);
    let prof = dir.join("out.pathprof");
    let out = Command::new(&exe).env("PATHPROF_FILE", &prof).output().expect("run program");
    assert!(prof.exists(), "{name}: no profile written; stderr: {}", String::from_utf8_lossy(&out.stderr));
    show_json(&prof)
}

/// The marker check plus the second-method entry-count check, at -O0 and -O2.
fn check_program(name: &str, sources: &[&str], extra: &[&str]) {
    let cxx = sources.iter().any(|s| s.ends_with(".cpp"));
    let srcs: Vec<PathBuf> = sources.iter().map(|s| programs().join(s)).collect();
    let clang = clang_entry_counts(&scratch(&format!("{name}-clang")), &srcs, cxx, extra);
    for opt in ["-O0", "-O2"] {
        let show = profile_of(&format!("{name}{opt}"), sources, opt, &[("PATHPROF_MODE", "edge")], extra);
        for src in &srcs {
            if !expectations(src).is_empty() {
                assert_markers(&show, src);
            }
        }
        let ours = entry_counts(&show);
        for (f, want) in &clang {
            if let Some(got) = ours.get(f) {
                assert_eq!(*got, Some(*want), "{name} {opt}: entry count of {f} (clang -fprofile-instr-generate says {want})");
            }
        }
        for f in show["functions"].as_array().unwrap() {
            assert_eq!(f["exact"], serde_json::Value::Bool(true), "{name} {opt}: {} not exact: {}", f["name"], f["inexact_reasons"]);
        }
        // Every function clang counted as executed must be in our profile too.
        for (f, &want) in &clang {
            if want > 0 {
                assert!(ours.contains_key(f), "{name} {opt}: function {f} missing from the pathprof profile");
            }
        }
    }
}

#[test]
fn loops() {
    check_program("loops", &["loops.c"], &[]);
}

#[test]
fn gotos_and_irreducible_flow() {
    check_program("gotos", &["gotos.c"], &[]);
}

#[test]
fn switch_with_shared_targets() {
    check_program("switch", &["switch.c"], &[]);
}

#[test]
fn recursion() {
    check_program("recursion", &["recursion.c"], &[]);
}

#[test]
fn exit_from_a_callee() {
    check_program("exit_deep", &["exit_deep.c"], &[]);
}

#[test]
fn longjmp_across_frames() {
    check_program("longjmp", &["longjmp.c"], &[]);
}

#[test]
fn cxx_exception_thrown_and_caught() {
    check_program("exception", &["exception.cpp"], &[]);
}

#[test]
fn two_translation_units() {
    check_program("two_tu", &["two_tu_main.c", "two_tu_util.c"], &[]);
}

#[test]
fn four_threads_atomic_counters_are_exact() {
    for opt in ["-O0", "-O2"] {
        let show = profile_of(&format!("threads{opt}"), &["threads.c"], opt, &[("PATHPROF_ATOMIC", "1")], &["-pthread"]);
        assert_markers(&show, &programs().join("threads.c"));
        assert_eq!(entry_counts(&show)["work"], Some(400_000));
        assert_eq!(entry_counts(&show)["run"], Some(4));
    }
}

#[test]
fn shared_library_counts_land_in_the_same_profile() {
    let dir = scratch("shlib");
    let lib = dir.join("libclassify.so");
    run_ok(wrapper(false).args(["-O2", "-fPIC", "-shared"]).arg(programs().join("shlib_lib.c")).arg("-o").arg(&lib));
    let exe = dir.join("prog");
    run_ok(wrapper(false).arg("-O2").arg(programs().join("shlib_main.c")).arg(&lib).arg("-o").arg(&exe));
    let prof = dir.join("out.pathprof");
    run_ok(Command::new(&exe).env("PATHPROF_FILE", &prof).env("LD_LIBRARY_PATH", &dir));
    let show = show_json(&prof);
    assert_markers(&show, &programs().join("shlib_lib.c"));
    assert_markers(&show, &programs().join("shlib_main.c"));
    assert_eq!(entry_counts(&show)["classify"], Some(30));
}

/// BL94 §3.2: the optimum is exactly |E| − |V| + 1 counters per function (E includes the virtual edges).
#[test]
fn stats_report_the_optimal_counter_count() {
    let dir = scratch("stats");
    let out = run_ok(
        wrapper(false)
            .args(["-O2", "-c", "--pathprof-stats"])
            .arg(programs().join("loops.c"))
            .arg("-o")
            .arg(dir.join("loops.o")),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.contains("pathprof: stats:")).expect("stats line");
    let num = |key: &str| -> u64 {
        let field = line.split_whitespace().find_map(|w| w.strip_prefix(&format!("{key}="))).expect(key);
        field.parse().unwrap_or_else(|_| panic!("{key} in {line}"))
    };
    assert_eq!(num("counters"), num("optimum"), "{line}");
    assert_eq!(num("functions"), 4, "{line}");
    assert_eq!(num("skipped"), 0, "{line}");
}

#[test]
fn unknown_mode_is_a_one_line_compiler_error() {
    let dir = scratch("badmode");
    let out = wrapper(false)
        .args(["-c"])
        .arg(programs().join("loops.c"))
        .arg("-o")
        .arg(dir.join("x.o"))
        .env("PATHPROF_MODE", "bogus")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PATHPROF_MODE='bogus'"), "{err}");
    assert!(!err.contains("PLEASE submit a bug report"), "crashed: {err}");
}

#[test]
fn unknown_wrapper_flag_is_rejected() {
    let out = wrapper(false).args(["--pathprof-frobnicate", "-c", "x.c"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

/// Each of -flto and -flto=thin instruments every function exactly once (one module in the profile, counts
/// exact), and opt-19 runs the pass by name.
#[test]
fn lto_and_opt_instrument_exactly_once() {
    for lto in ["-flto", "-flto=thin"] {
        let show = profile_of(&format!("lto{lto}"), &["two_tu_main.c", "two_tu_util.c"], "-O2", &[], &[lto, "-fuse-ld=lld"]);
        assert_markers(&show, &programs().join("two_tu_util.c"));
        let names: Vec<_> = show["functions"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_string()).collect();
        let mut dedup = names.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(names.len(), dedup.len(), "{lto}: a function was instrumented twice: {names:?}");
    }
    let dir = scratch("opt");
    let ll = dir.join("loops.ll");
    run_ok(Command::new("clang-19").args(["-O0", "-g", "-S", "-emit-llvm", "-Xclang", "-disable-O0-optnone"]).arg(programs().join("loops.c")).arg("-o").arg(&ll));
    let out = run_ok(
        Command::new("opt-19")
            .arg(format!("-load-pass-plugin={}", dist().join("lib/libpathprof.so").display()))
            .args(["-passes=pathprof", "-S"])
            .arg(&ll),
    );
    let ir = String::from_utf8_lossy(&out.stdout);
    assert!(ir.contains("__pathprof_register_module"), "opt output has no registration");
}
