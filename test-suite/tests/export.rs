//! End-to-end: `pathprof export --format=sample-text` on a real profile, read back by `llvm-profdata-19` and
//! used by `clang-19 -fprofile-sample-use`.
//!
//! Hand-derived expectations for `programs/loops.c` (main's `DISubprogram` line is 7, so offset = line − 7):
//! the first loop runs i = 0..999, so its condition (line 8, offset 1) is evaluated 1001 times, lines 9, 11 and
//! the loop body's closing brace (15) run 1000 times, `by3()` (line 10, offset 3) 334 times (i % 3 == 0),
//! `by5()` (12, offset 5) 200 times and `other()` (14, offset 7) 800 times; the nested loops run the outer
//! condition (16) 11 times, the inner condition (17) Σ_{i<10} (i + 1) = 55 times and `sink += j` (18) 45 times;
//! `return 0` (19) once. by3, by5 and other are single-line functions called 334, 200 and 800 times.

use pathprof_test_suite::*;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// main's body: line offset → samples (see the module docs).
const MAIN_BODY: [(u32, u64); 11] =
    [(1, 1001), (2, 1000), (3, 334), (4, 1000), (5, 200), (7, 800), (8, 1000), (9, 11), (10, 55), (11, 45), (12, 1)];

/// Builds `program` with the wrapper at -O2 in `mode`, runs it, exports its profile; returns the sample-profile
/// path (the text is also checked to equal the `-o -` output, and the export to print nothing on stderr).
fn exported(dir: &Path, program: &str, mode: &str) -> PathBuf {
    let src = programs().join(program);
    let stem = format!("{}-{mode}", program.split('.').next().unwrap());
    let exe = dir.join(&stem);
    run_ok(wrapper(program.ends_with(".cpp")).env("PATHPROF_MODE", mode).arg("-O2").arg(&src).arg("-o").arg(&exe));
    let prof = dir.join(format!("{stem}.pathprof"));
    // Programs may exit non-zero on purpose; the profile is written anyway.
    let _ = Command::new(&exe).env("PATHPROF_FILE", &prof).output().expect("run program");
    let out = dir.join(format!("{stem}.prof"));
    let pathprof = dist().join("bin/pathprof");
    let o = run_ok(Command::new(&pathprof).args(["export", "--format=sample-text"]).arg(&prof).arg("-o").arg(&out));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "", "export warned");
    let o = run_ok(Command::new(&pathprof).args(["export", "--format=sample-text"]).arg(&prof).args(["-o", "-"]));
    assert_eq!(o.stdout, std::fs::read(&out).unwrap(), "-o - and -o FILE differ");
    out
}

/// One function of `llvm-profdata show --sample --all-functions`.
#[derive(Debug, Default, PartialEq)]
struct Shown {
    total: u64,
    head: u64,
    body: BTreeMap<u32, u64>,
}

/// Parses `Function: NAME: TOTAL, HEAD, N sampled lines` headers and the `  OFFSET: SAMPLES` lines in the
/// "Samples collected in the function's body { ... }" block that follows.
fn profdata_show(profile: &Path) -> BTreeMap<String, Shown> {
    let out = run_ok(Command::new("llvm-profdata-19").args(["show", "--sample", "--all-functions"]).arg(profile));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut m: BTreeMap<String, Shown> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_body = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Function: ") {
            let (name, nums) = rest.rsplit_once(": ").expect("Function: NAME: TOTAL, HEAD, ...");
            let nums: Vec<&str> = nums.split(", ").collect();
            let f = Shown { total: nums[0].parse().unwrap(), head: nums[1].parse().unwrap(), body: BTreeMap::new() };
            m.insert(name.to_string(), f);
            current = Some(name.to_string());
        } else if line.starts_with("Samples collected in the function's body {") {
            in_body = true;
        } else if line.trim() == "}" {
            in_body = false;
        } else if in_body {
            let (off, n) = line.trim().split_once(": ").expect("OFFSET: SAMPLES");
            let f = m.get_mut(current.as_ref().unwrap()).unwrap();
            assert!(f.body.insert(off.parse().expect("no discriminator"), n.parse().unwrap()).is_none());
        }
    }
    m
}

/// `clang-19 FIRST... REST...`.
fn clang(first: &[String], rest: &[&dyn AsRef<OsStr>]) -> Output {
    Command::new("clang-19").args(first).args(rest.iter().map(|a| a.as_ref())).output().expect("run clang-19")
}

/// The strict flags: every warning an error, including the back-end's sample-loader diagnostics
/// (-Wbackend-plugin: unusable profile records) and misexpect.
const STRICT: [&str; 5] = ["-Werror", "-Wall", "-Wbackend-plugin", "-Wmisexpect", "-Wprofile-instr-unprofiled"];

fn use_flags(profile: &Path) -> Vec<String> {
    vec![
        "-O2".into(),
        "-gline-tables-only".into(),
        "-fdebug-info-for-profiling".into(),
        format!("-fprofile-sample-use={}", profile.display()),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The metadata node `!N` that `line` attaches as `!prof !N`, resolved in `ir`.
fn prof_of<'a>(ir: &'a str, line: &str) -> &'a str {
    let id = line.split("!prof ").nth(1).unwrap_or_else(|| panic!("no !prof on: {line}"));
    let id = id.split([',', ' ']).next().unwrap();
    let def = format!("{id} = ");
    ir.lines().find_map(|l| l.strip_prefix(&def)).unwrap_or_else(|| panic!("{id} not defined"))
}

#[test]
fn sample_profile_export_is_read_by_llvm_profdata_and_used_by_clang() {
    let dir = scratch("export-loops");
    let out = exported(&dir, "loops.c", "path");

    // 1. llvm-profdata parses it, with the hand-derived counts.
    let shown = profdata_show(&out);
    let one = |total, head, off: u32| Shown { total, head, body: [(off, total)].into() };
    assert_eq!(shown["by3"], one(334, 334, 0));
    assert_eq!(shown["by5"], one(200, 200, 0));
    assert_eq!(shown["other"], one(800, 800, 0));
    let main = &shown["main"];
    assert_eq!(main.body, BTreeMap::from(MAIN_BODY));
    assert_eq!(main.head, 1);
    assert_eq!(main.total, MAIN_BODY.iter().map(|x| x.1).sum::<u64>());
    assert_eq!(main.total, 5447);
    assert_eq!(shown.len(), 4);

    // 2. An edge-mode profile of the same program exports exactly the same text.
    let edge = exported(&dir, "loops.c", "edge");
    assert_eq!(std::fs::read_to_string(&edge).unwrap(), std::fs::read_to_string(&out).unwrap());

    // 3. clang accepts it without a single diagnostic, with every warning an error (STRICT).
    let src = programs().join("loops.c");
    let use_flags = use_flags(&out);
    let strict: Vec<String> = STRICT.iter().map(|s| s.to_string()).collect();
    let ll = dir.join("loops-pgo.ll");
    let o = clang(&[use_flags.clone(), strict].concat(), &[&"-S", &"-emit-llvm", &src, &"-o", &ll]);
    assert!(o.status.success(), "clang failed:\n{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "", "clang printed diagnostics");

    // 4. The IR carries the samples: by3's entry count is its head samples + 1 (the loader adds 1 so that a
    //    profiled function is never "zero"), and main's call of by3 is weighted with the 334 samples of its line.
    let ir = std::fs::read_to_string(&ll).unwrap();
    let define = |f: &str| ir.lines().find(|l| l.starts_with("define ") && l.contains(&format!("@{f}("))).unwrap();
    assert_eq!(prof_of(&ir, define("by3")), "!{!\"function_entry_count\", i64 335}");
    assert_eq!(prof_of(&ir, define("by5")), "!{!\"function_entry_count\", i64 201}");
    assert_eq!(prof_of(&ir, define("main")), "!{!\"function_entry_count\", i64 2}");
    let call = ir.lines().find(|l| l.contains("call void @by3()")).expect("main calls by3");
    assert_eq!(prof_of(&ir, call), "!{!\"branch_weights\", i32 334}");
    // Without the profile there is no such metadata: it comes from the samples.
    let plain = dir.join("loops-plain.ll");
    let o = clang(&[], &[&"-O2", &"-gline-tables-only", &"-S", &"-emit-llvm", &src, &"-o", &plain]);
    assert!(o.status.success());
    let plain = std::fs::read_to_string(&plain).unwrap();
    assert!(!plain.contains("function_entry_count") && !plain.contains("branch_weights"));

    // 5. The loader reports applying our samples to the lines they belong to.
    let o = clang(&use_flags, &[&"-Rpass-analysis=sample-profile", &"-c", &src, &"-o", &"/dev/null"]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    for remark in [
        "loops.c:3:49: remark: Applied 334 samples from profile (offset: 0)",
        "loops.c:10:13: remark: Applied 334 samples from profile (offset: 3)",
        "loops.c:12:13: remark: Applied 200 samples from profile (offset: 5)",
        "loops.c:14:13: remark: Applied 800 samples from profile (offset: 7)",
        "loops.c:18:18: remark: Applied 45 samples from profile (offset: 11)",
    ] {
        assert!(err.contains(remark), "missing remark {remark:?} in:\n{err}");
    }
    assert!(!err.contains("warning:"), "{err}");

    // 6. Record and sample coverage at 100%: every record of by3, by5 and other is used. Only main can fall
    //    short: the profile has no discriminators (cli/src/export.rs), so a line split across blocks (a `for`
    //    header) applies only to its instructions with discriminator 0, which -O2's early simplification may
    //    have removed. The warnings name the function by its line (main: 7).
    let coverage = [
        &"-mllvm" as &dyn AsRef<OsStr>,
        &"-sample-profile-check-record-coverage=100",
        &"-mllvm",
        &"-sample-profile-check-sample-coverage=100",
        &"-c",
        &src,
        &"-o",
        &"/dev/null",
    ];
    let o = clang(&use_flags, &coverage);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    for w in err.lines().filter(|l| l.contains("warning:")) {
        assert!(w.contains("loops.c:7: "), "coverage warning for a function other than main: {w}\n{err}");
    }

    // 7. The profile-optimised program still runs.
    let exe = dir.join("loops-pgo");
    let o = clang(&use_flags, &[&src, &"-o", &exe]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    run_ok(&mut Command::new(&exe));
}

/// C++: mangled linkage names, templates instantiated from the standard library headers, exceptions. `dispatch`
/// is called once per iteration, 5000 times.
#[test]
fn cxx_sample_profile_is_accepted_by_clangxx() {
    let dir = scratch("export-cxx");
    let out = exported(&dir, "cxx_mix.cpp", "path");
    let shown = profdata_show(&out);
    assert_eq!(shown["_Z8dispatchi"].head, 5000);
    assert!(shown.keys().any(|k| k.starts_with("_ZNSt")), "standard library instantiations are profiled too");

    let src = programs().join("cxx_mix.cpp");
    let ll = dir.join("cxx_mix-pgo.ll");
    let o = Command::new("clang++-19")
        .args(use_flags(&out))
        .args(STRICT)
        .args(["-S", "-emit-llvm"])
        .arg(&src)
        .arg("-o")
        .arg(&ll)
        .output()
        .expect("run clang++-19");
    assert!(o.status.success(), "clang++ failed:\n{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "", "clang++ printed diagnostics");
    let ir = std::fs::read_to_string(&ll).unwrap();
    let define = ir.lines().find(|l| l.starts_with("define ") && l.contains("@_Z8dispatchi(")).unwrap();
    assert_eq!(prof_of(&ir, define), "!{!\"function_entry_count\", i64 5001}");
}
