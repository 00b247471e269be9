//! Module identity end to end: a module is its name and its output, so modules of one name in different
//! executables or shared objects — every program merged by `--pathprof-lto`, one source compiled twice with
//! different `-D` into two libraries, `util.c` compiled in two directories — keep their own counts, a rebuild
//! replaces only its own old record, the runtime prints nothing on a healthy run, and use mode annotates each
//! module from its own record. Counts are derived by hand in `programs/shlib_variant.c`.

use pathprof_format::profile::{self, ModuleProfile, Profile};
use pathprof_test_suite::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const LIB: &str = "shlib_variant.c";

/// Line of the first line of `programs/shlib_variant.c` containing `needle`.
fn line_of(needle: &str) -> u64 {
    let text = std::fs::read_to_string(programs().join(LIB)).unwrap();
    text.lines().position(|l| l.contains(needle)).expect("needle in source") as u64 + 1
}

/// The program of `shlib_variant_main.c` with its two shared objects, built in `dir` with the wrapper and
/// `flags`; libstep3.so also with `extra3`. Returns the three link commands' outputs (libstep2.so, libstep3.so,
/// prog). `prog` links `lib2_for_prog` (the layout's own libstep2.so when `None`).
fn build(dir: &Path, flags: &[&str], extra3: &[&str], lib2_for_prog: Option<&Path>) -> [Output; 3] {
    let lib = |step: &str, extra: &[&str]| {
        run_ok(
            wrapper(false)
                .args(flags)
                .args(["-O0", "-g", "-fPIC", "-shared", &format!("-DSTEP={step}")])
                .args(extra)
                .arg(programs().join(LIB))
                .arg("-o")
                .arg(dir.join(format!("libstep{step}.so"))),
        )
    };
    let (a, b) = (lib("2", &[]), lib("3", extra3));
    let lib2 = lib2_for_prog.map_or_else(|| dir.join("libstep2.so"), Path::to_path_buf);
    let prog = run_ok(
        wrapper(false)
            .args(flags)
            .args(["-O0", "-g"])
            .arg(programs().join("shlib_variant_main.c"))
            .arg(&lib2)
            .arg(format!("-Wl,-rpath,{}", lib2.parent().unwrap().display()))
            .args(["-ldl", "-o"])
            .arg(dir.join("prog")),
    );
    [a, b, prog]
}

/// Runs `dir/prog dir/libstep3.so` writing `prof`; asserts it succeeded, printed `stdout` and nothing on stderr.
fn run_prog(dir: &Path, prof: &Path, stdout: &str) {
    let out = Command::new(dir.join("prog"))
        .arg(dir.join("libstep3.so"))
        .env("PATHPROF_FILE", prof)
        .env_remove("PATHPROF_VERBOSE")
        .output()
        .expect("run prog");
    assert!(out.status.success(), "prog failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), stdout);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "the runtime must print nothing on a healthy run");
}

fn read_profile(prof: &Path) -> Profile {
    profile::read(&std::fs::read(prof).unwrap()).expect("a valid profile")
}

/// The record whose output is `output`.
fn record<'a>(p: &'a Profile, output: &Path) -> &'a ModuleProfile {
    let want = output.to_string_lossy();
    p.modules.iter().find(|m| m.meta.output == want).unwrap_or_else(|| {
        let have: Vec<&str> = p.modules.iter().map(|m| m.meta.output.as_str()).collect();
        panic!("no record for {want}; records: {have:?}")
    })
}

/// `show --json`'s function `name` of the module written to `output`.
fn function<'a>(show: &'a Value, output: &Path, name: &str) -> &'a Value {
    let want = output.to_string_lossy();
    show["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["module_output"] == *want && f["name"] == name)
        .unwrap_or_else(|| panic!("no function {name} in {want}"))
}

/// The count of the block of `f` holding source line `line`.
fn block_count(f: &Value, line: u64) -> Option<u64> {
    f["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["lines"].as_array().unwrap().iter().any(|l| l.as_u64() == Some(line)))
        .filter_map(|b| b["count"].as_u64())
        .max()
}

/// pick's entry count and the counts of its `return 1`, `return 3` (EXTRA builds) and `return 2` blocks.
fn pick_counts(show: &Value, output: &Path) -> (Option<u64>, Option<u64>, Option<u64>, Option<u64>) {
    let f = function(show, output, "pick");
    let at = |needle: &str| block_count(f, line_of(needle));
    (f["entry_count"].as_u64(), at("return 1;"), at("return 3;"), at("return 2;"))
}

/// Two shared objects and the executable, all built with `--pathprof-lto` in context mode: three modules named
/// after their outputs (LLVM calls each `ld-temp.o`), each with its own hand-derived counts, runs adding up, no
/// output on stderr; rebuilding libstep3.so replaces its record only. Then use mode, from that profile, on the
/// same layout: every function annotated from its own module's record, none reported stale.
#[test]
fn lto_shared_objects_are_modules_of_their_own() {
    let dir = scratch("identity-lto");
    let real = dir.canonicalize().unwrap();
    let flags = ["--pathprof-mode=context", "--pathprof-lto"];
    build(&dir, &flags, &[], None);
    let prof = dir.join("out.pathprof");
    run_prog(&dir, &prof, "45 20\n");
    run_prog(&dir, &prof, "45 20\n");

    let (lib2, lib3, prog) = (real.join("libstep2.so"), real.join("libstep3.so"), real.join("prog"));
    let p = read_profile(&prof);
    let mut names: Vec<&str> = p.modules.iter().map(|m| m.meta.module_name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["libstep2.so", "libstep3.so", "prog"]);
    for output in [&lib2, &lib3, &prog] {
        let m = record(&p, output);
        assert_eq!(m.runs, 2, "{}", m.meta.label());
        assert_eq!(output.file_name().unwrap().to_str(), Some(m.meta.module_name.as_str()));
    }
    let show = show_json(&prof);
    // Two runs: step 2 over 30 values (15 multiples of 2), step 3 over 12 (4 multiples of 3).
    assert_eq!(pick_counts(&show, &lib2), (Some(60), Some(30), None, Some(30)));
    assert_eq!(pick_counts(&show, &lib3), (Some(24), Some(8), None, Some(16)));
    for (output, runs) in [(&lib2, 2), (&lib3, 2), (&prog, 2)] {
        let f = if output == &prog { "main" } else { "run" };
        assert_eq!(function(&show, output, f)["entry_count"].as_u64(), Some(runs), "{f} of {}", output.display());
    }

    // Rebuild libstep3.so from changed code: its old record goes, the others keep adding up.
    let before = read_profile(&prof);
    build(&dir, &flags, &["-DEXTRA"], None);
    run_prog(&dir, &prof, "45 21\n");
    let p = read_profile(&prof);
    assert_eq!(p.modules.len(), 3);
    for output in [&lib2, &prog] {
        assert_eq!(record(&p, output).meta_hash, record(&before, output).meta_hash, "{}: same build", output.display());
        assert_eq!(record(&p, output).runs, 3);
    }
    assert_ne!(record(&p, &lib3).meta_hash, record(&before, &lib3).meta_hash);
    assert_eq!(record(&p, &lib3).runs, 1);
    let show = show_json(&prof);
    assert_eq!(pick_counts(&show, &lib2), (Some(90), Some(45), None, Some(45)));
    // i = 7 is the one non-multiple of 3 that returns 3: 4 + 1 + 7 = 12.
    assert_eq!(pick_counts(&show, &lib3), (Some(12), Some(4), Some(1), Some(7)));

    // Use mode, same layout in another directory (as a PGO build would be), LTO output kept as bitcode.
    let use_dir = dir.join("use");
    std::fs::create_dir_all(&use_dir).unwrap();
    let use_flags = ["--pathprof-lto", "--pathprof-stats", &format!("--pathprof-use={}", prof.display())];
    let bitcode = [use_flags.as_slice(), &["-Wl,--plugin-opt=emit-llvm"]].concat();
    let outs = build(&use_dir, &bitcode, &["-DEXTRA"], Some(&dir.join("libstep2.so")));
    for (out, module, annotated) in [(&outs[0], "libstep2.so", 2), (&outs[1], "libstep3.so", 2), (&outs[2], "prog", 1)]
    {
        let err = String::from_utf8_lossy(&out.stderr);
        let want = format!("pathprof: use: module={module} annotated={annotated} mismatched=0 missing=0");
        assert!(err.contains(&want), "{module}: {err}");
        assert!(!err.contains("warning"), "{module}: {err}");
    }
    for (lib, pick_entry, run_entry, weights) in
        [("libstep2.so", 90, 3, &["45, 45"][..]), ("libstep3.so", 12, 1, &["4, 8", "1, 7"][..])]
    {
        let ir = llvm_dis(&use_dir.join(lib));
        // `run` is global and defined in both objects with the same shape: its entry count is this object's
        // (3 or 1), not the sum over both (4).
        assert_eq!(entry_count(&ir, "pick"), Some(pick_entry), "{lib}");
        assert_eq!(entry_count(&ir, "run"), Some(run_entry), "{lib}");
        let body = function_body(&ir, "pick");
        for w in weights {
            let md = branch_weights_ids(&ir, w);
            assert!(md.iter().any(|id| body.contains(&format!("!prof !{id}"))), "{lib}: pick has no weights {w}");
        }
    }
}

/// Per translation unit (no LTO): the same source compiled with `-DSTEP=2` and `-DSTEP=3` into two shared
/// objects is two modules of one name and two outputs — before outputs were part of the identity, each run
/// dropped the other's counts as "an older build". A rebuild of one replaces only its own record.
#[test]
fn one_source_in_two_shared_objects_is_two_modules() {
    let dir = scratch("identity-tu");
    let real = dir.canonicalize().unwrap();
    let flags = ["--pathprof-mode=path"];
    build(&dir, &flags, &[], None);
    let prof = dir.join("out.pathprof");
    run_prog(&dir, &prof, "45 20\n");
    run_prog(&dir, &prof, "45 20\n");
    let (lib2, lib3) = (real.join("libstep2.so"), real.join("libstep3.so"));
    let p = read_profile(&prof);
    assert_eq!(p.modules.len(), 3);
    let source = programs().join(LIB).to_string_lossy().into_owned();
    for output in [&lib2, &lib3] {
        assert_eq!(record(&p, output).meta.module_name, source);
        assert_eq!(record(&p, output).runs, 2);
    }
    let show = show_json(&prof);
    assert_eq!(pick_counts(&show, &lib2), (Some(60), Some(30), None, Some(30)));
    assert_eq!(pick_counts(&show, &lib3), (Some(24), Some(8), None, Some(16)));

    let before = read_profile(&prof);
    build(&dir, &flags, &["-DEXTRA"], None);
    run_prog(&dir, &prof, "45 21\n");
    let p = read_profile(&prof);
    assert_eq!(p.modules.len(), 3);
    assert_eq!(record(&p, &lib2).meta_hash, record(&before, &lib2).meta_hash);
    assert_eq!(record(&p, &lib2).runs, 3);
    assert_eq!(record(&p, &lib3).runs, 1);
    let show = show_json(&prof);
    assert_eq!(pick_counts(&show, &lib2), (Some(90), Some(45), None, Some(45)));
    assert_eq!(pick_counts(&show, &lib3), (Some(12), Some(4), Some(1), Some(7)));
}

/// `util.c` in two directories, each compiled from its own directory without `-o` (a recursive make): same
/// name, two modules, told apart by the directory the compiler ran in.
#[test]
fn same_file_name_in_two_directories_is_two_modules() {
    let dir = scratch("identity-dirs");
    for (sub, name, step) in [("a", "ua", 2), ("b", "ub", 5)] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        // `s++` (line 5) runs for the multiples of step in [0, 20): 10 (step 2) and 4 (step 5).
        let src = format!("int {name}(int n) {{\n    int s = 0;\n    for (int i = 0; i < n; i++)\n        if (i % {step} == 0)\n            s++;\n    return s;\n}}\n");
        std::fs::write(d.join("util.c"), src).unwrap();
        run_ok(wrapper(false).current_dir(&d).args(["--pathprof-mode=edge", "-O0", "-c", "util.c"]));
    }
    std::fs::write(
        dir.join("main.c"),
        "#include <stdio.h>\nint ua(int);\nint ub(int);\nint main(void) { printf(\"%d %d\\n\", ua(20), ub(20)); return 0; }\n",
    )
    .unwrap();
    run_ok(wrapper(false).current_dir(&dir).args([
        "--pathprof-mode=edge",
        "-O0",
        "main.c",
        "a/util.o",
        "b/util.o",
        "-o",
        "prog",
    ]));
    let prof = dir.join("out.pathprof");
    for _ in 0..2 {
        let out =
            Command::new(dir.join("prog")).env("PATHPROF_FILE", &prof).env_remove("PATHPROF_VERBOSE").output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "10 4\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    }
    let p = read_profile(&prof);
    let real = dir.canonicalize().unwrap();
    let utils: Vec<(&str, u64)> =
        p.modules.iter().filter(|m| m.meta.module_name == "util.c").map(|m| (m.meta.output.as_str(), m.runs)).collect();
    let (a, b) = (format!("{}/a/", real.display()), format!("{}/b/", real.display()));
    assert_eq!(utils.len(), 2, "{utils:?}");
    assert!(utils.contains(&(a.as_str(), 2)) && utils.contains(&(b.as_str(), 2)), "{utils:?}");
    let show = show_json(&prof);
    let entries = entry_counts(&show);
    assert_eq!((entries["ua"], entries["ub"]), (Some(2), Some(2)));
    let count = |out: &str, f: &str| {
        let f =
            show["functions"].as_array().unwrap().iter().find(|x| x["module_output"] == out && x["name"] == f).unwrap();
        block_count(f, 5)
    };
    assert_eq!((count(&a, "ua"), count(&b, "ub")), (Some(20), Some(8)));
}

fn llvm_dis(bitcode: &Path) -> String {
    let out = run_ok(Command::new("llvm-dis-19").arg(bitcode).arg("-o").arg("-"));
    String::from_utf8(out.stdout).unwrap()
}

/// The `define` line and body of function `name` (internal functions may carry a suffix after LTO).
fn function_body(ir: &str, name: &str) -> String {
    let start = ir
        .lines()
        .position(|l| l.starts_with("define") && (l.contains(&format!("@{name}(")) || l.contains(&format!("@{name}."))))
        .unwrap_or_else(|| panic!("no function {name}"));
    ir.lines().skip(start).take_while(|l| *l != "}").collect::<Vec<_>>().join("\n")
}

/// The `function_entry_count` attached to function `name`.
fn entry_count(ir: &str, name: &str) -> Option<u64> {
    let body = function_body(ir, name);
    let def = body.lines().next()?;
    let md = def.split("!prof !").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?;
    let line = ir.lines().find(|l| l.starts_with(&format!("!{md} = ")))?;
    line.contains("function_entry_count").then_some(())?;
    line.rsplit("i64 ").next()?.trim_end_matches('}').parse().ok()
}

/// Ids of the metadata nodes `!{!"branch_weights", i32 A, i32 B}` with `weights` = "A, B".
fn branch_weights_ids(ir: &str, weights: &str) -> Vec<String> {
    let want = format!(
        "!{{!\"branch_weights\", {}}}",
        weights.split(", ").map(|w| format!("i32 {w}")).collect::<Vec<_>>().join(", ")
    );
    ir.lines()
        .filter(|l| l.ends_with(&want))
        .filter_map(|l| l.strip_prefix('!')?.split(' ').next().map(str::to_string))
        .collect()
}

/// Use mode, two sources of one file name in one tree (e2fsprogs' `lib/ext2fs/ismounted.c` and
/// `misc/ismounted.c`): each has a `static int pick` of the same branch shape, and only the program of `a/util.c`
/// ran. A compile of `b/util.c` is missing from the profile — before sources were compared it took `a/util.c`'s
/// record and annotated its `pick` with the other file's counts — while `a/util.c` is annotated in its own tree
/// and in a copy of the tree under another name, whose `b/util.c` still is not; also when the compile names
/// the source by its absolute path, as CMake does (in the copy, before, a name that matched no record).
#[test]
fn use_mode_takes_no_counts_of_another_source_of_the_same_name() {
    let dir = scratch("identity-sources");
    let util = |name: &str, m: u32| {
        format!(
            "static int pick(int x) {{\n    if (x % {m} == 0)\n        return 1;\n    return 2;\n}}\n\
             int {name}(int n) {{\n    int s = 0;\n    for (int i = 0; i < n; i++)\n        s += pick(i);\n    \
             return s;\n}}\n"
        )
    };
    for (sub, name, m) in [("a", "ua", 3), ("b", "ub", 5)] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join("util.c"), util(name, m)).unwrap();
    }
    std::fs::write(
        dir.join("main.c"),
        "#include <stdio.h>\nint ua(int);\nint main(void) { printf(\"%d\\n\", ua(30)); return 0; }\n",
    )
    .unwrap();
    let cc = |tree: &Path, sub: &str, extra: &[String]| {
        let out = run_ok(
            wrapper(false)
                .current_dir(tree.join(sub))
                .args(["-O0", "-c", "--pathprof-stats", "util.c", "-o", "util.o"])
                .args(extra),
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let edge = ["--pathprof-mode=edge".to_string()];
    cc(&dir, "a", &edge);
    cc(&dir, "b", &edge);
    run_ok(wrapper(false).current_dir(&dir).args(["--pathprof-mode=edge", "-O0", "main.c", "a/util.o", "-o", "prog"]));
    let prof = dir.join("out.pathprof");
    let out = Command::new(dir.join("prog")).env("PATHPROF_FILE", &prof).output().unwrap();
    // ua(30): pick(i) is 1 for the 10 multiples of 3 below 30, else 2.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "50\n");
    let names: Vec<String> = read_profile(&prof).modules.iter().map(|m| m.meta.module_name.clone()).collect();
    assert_eq!(names.iter().filter(|n| *n == "util.c").count(), 1, "{names:?}");

    let copy = dir.parent().unwrap().join(format!("{}-copy", dir.file_name().unwrap().to_string_lossy()));
    let _ = std::fs::remove_dir_all(&copy);
    run_ok(Command::new("cp").arg("-r").arg(&*dir).arg(&copy));
    let use_ = [format!("--pathprof-use={}", prof.display())];
    for tree in [dir.to_path_buf(), copy.clone()] {
        let a = cc(&tree, "a", &use_);
        assert!(a.contains("annotated=2 mismatched=0 missing=0"), "{}: {a}", tree.display());
        let b = cc(&tree, "b", &use_);
        assert!(b.contains("annotated=0 mismatched=0 missing=2"), "{}: {b}", tree.display());
        // The same sources named by absolute paths from the tree's top, as CMake names them: the same files.
        for (sub, want) in [("a", "annotated=2 mismatched=0 missing=0"), ("b", "annotated=0 mismatched=0 missing=2")] {
            let src = tree.join(sub).join("util.c");
            let out = run_ok(
                wrapper(false)
                    .current_dir(&tree)
                    .args(["-O0", "-c", "--pathprof-stats", &use_[0], "-o"])
                    .arg(tree.join(sub).join("abs.o"))
                    .arg(&src),
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(want), "{}: {err}", src.display());
        }
    }
    std::fs::remove_dir_all(&copy).unwrap();
}

/// The workflow PGO tutorials teach: the instrumented program and the optimised one built from the same source
/// into one directory (`app-prof`, then `app`). The use build has no record of its own, and takes the other
/// compile's as a weaker match: every function of the same CFG annotated (`main` included; before, the rule
/// that another output of the directory is another compile left all but inline functions missing), and
/// one whose CFG differs because that compile had other flags (`-DDEBUG`, as e2fsprogs' `tst_ismounted`) is
/// missing, not stale.
#[test]
fn a_use_build_beside_the_instrumented_one_takes_its_record() {
    let dir = scratch("identity-beside");
    let src = "#include <stdio.h>\nstatic int pick(int x) {\n#ifdef DEBUG\n    if (x == 7)\n        \
               printf(\"seven\\n\");\n#endif\n    if (x % 3 == 0)\n        return 1;\n    return 2;\n}\n\
               int main(void) {\n    int s = 0;\n    for (int i = 0; i < 30; i++)\n        s += pick(i);\n    \
               printf(\"%d\\n\", s);\n    return 0;\n}\n";
    std::fs::write(dir.join("app.c"), src).unwrap();
    let cc = |args: &[&str]| {
        let out = run_ok(wrapper(false).current_dir(&*dir).args(["-O0", "--pathprof-stats", "app.c"]).args(args));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    cc(&["--pathprof-mode=edge", "-o", "app-prof"]);
    let prof = dir.join("app.pathprof");
    let out = Command::new(dir.join("app-prof")).env("PATHPROF_FILE", &prof).output().unwrap();
    // pick(i) is 1 for the 10 multiples of 3 below 30, else 2.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "50\n");
    let use_ = format!("--pathprof-use={}", prof.display());
    let same = cc(&[&use_, "-o", "app"]);
    assert!(same.contains("annotated=2 mismatched=0 missing=0"), "{same}");
    let debug = cc(&[&use_, "-DDEBUG", "-o", "app-debug"]);
    assert!(debug.contains("annotated=1 mismatched=0 missing=1"), "{debug}");
    // The instrumented program rebuilt in place has its own record, and a stale function is stale there.
    let own = cc(&[&use_, "-DDEBUG", "-o", "app-prof"]);
    assert!(own.contains("annotated=1 mismatched=1 missing=0"), "{own}");
}
