//! `fork()`, exactly: fork_main.c forks from inside a loop two calls below main (through a function pointer and
//! a shared object, fork_lib.c); parent and child do different work afterwards and the parent waits. Every mode,
//! with and without `--pathprof-atomic`, at -O0 and -O2: the merged profile and each process's own (`%p`) are
//! exact and match the counts derived by hand in the sources (`// expect: N` merged, `/* child: N */` the
//! child's own file, the parent's own = merged − child), the activations on the stack at the fork are counted
//! once (entry counts) with one fork re-entry each, `pathprof merge` of the two `%p` files gives the merged
//! file's counts, and the path-mode path counts follow by hand (see `path_counts_of_the_forking_loop`).

use pathprof_test_suite::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const MODES: [&str; 4] = ["edge", "path", "context", "piecewise"];

/// `/* child: N */` markers: line → the count in the child's own profile.
fn child_expectations(source: &Path) -> BTreeMap<u32, u64> {
    let text = std::fs::read_to_string(source).unwrap();
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(pos) = line.find("/* child: ") {
            let rest = &line[pos + "/* child: ".len()..];
            let n = rest.split_whitespace().next().unwrap().parse().expect("child marker is a number");
            m.insert(i as u32 + 1, n);
        }
    }
    m
}

/// Builds libforklib.so and the program in `dir` with the wrapper.
fn build(dir: &Path, mode: &str, opt: &str, atomic: bool) -> PathBuf {
    let flags = |c: &mut Command| {
        c.arg(opt).arg(format!("--pathprof-mode={mode}"));
        if atomic {
            c.arg("--pathprof-atomic");
        }
    };
    let lib = dir.join("libforklib.so");
    let mut cc = wrapper(false);
    flags(&mut cc);
    run_ok(cc.args(["-fPIC", "-shared"]).arg(programs().join("fork_lib.c")).arg("-o").arg(&lib));
    let exe = dir.join("prog");
    let mut cc = wrapper(false);
    flags(&mut cc);
    run_ok(
        cc.arg(programs().join("fork_main.c"))
            .arg(&lib)
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .arg("-o")
            .arg(&exe),
    );
    exe
}

fn run(exe: &Path, profile: &Path) {
    let out = Command::new(exe).env("PATHPROF_FILE", profile).current_dir(exe.parent().unwrap()).output().unwrap();
    assert!(out.status.success(), "{}: {}", exe.display(), String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn function<'a>(show: &'a Value, name: &str) -> &'a Value {
    show["functions"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap_or_else(|| panic!("no {name}"))
}

/// Blocks with fork re-entries of `name`: (first source line, count).
fn reentered(show: &Value, name: &str) -> Vec<(u64, u64)> {
    let f = function(show, name);
    f["fork_reentries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let b = &f["blocks"][r["block"].as_u64().unwrap() as usize];
            (b["lines"][0].as_u64().unwrap_or(0), r["count"].as_u64().unwrap())
        })
        .collect()
}

fn line_of(source: &str, needle: &str) -> u64 {
    let text = std::fs::read_to_string(programs().join(source)).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1
}

fn all_exact(show: &Value, what: &str) {
    for f in show["functions"].as_array().unwrap() {
        assert_eq!(f["exact"], true, "{what}: {} not exact: {}", f["name"], f["inexact_reasons"]);
        assert_eq!(f["abnormal_exits"], Value::Array(vec![]), "{what}: {} left abnormally", f["name"]);
        assert_eq!(f["net_reentries"], Value::Array(vec![]), "{what}: {}", f["name"]);
    }
}

#[test]
fn forked_profiles_are_exact_in_every_mode() {
    let sources = [programs().join("fork_main.c"), programs().join("fork_lib.c")];
    let fork_line = line_of("fork_lib.c", "pid_t pid = fork();");
    let run_line = line_of("fork_main.c", "int r = t(n, fork_at);");
    let call_line = line_of("fork_main.c", "if (run(t, 3 + round");
    for mode in MODES {
        for atomic in [false, true] {
            for opt in ["-O0", "-O2"] {
                let what = format!("{mode}{} {opt}", if atomic { " atomic" } else { "" });
                let dir = scratch(&format!("fork-{mode}-{atomic}{opt}"));
                let exe = build(&dir, mode, opt, atomic);
                // One file for both processes.
                let merged = dir.join("merged.pathprof");
                run(&exe, &merged);
                let show = show_json(&merged);
                all_exact(&show, &what);
                for s in &sources {
                    assert_markers(&show, s);
                }
                let entries = entry_counts(&show);
                for (f, n) in [("spawn_in_loop", 3), ("run", 3), ("main", 1), ("child_work", 1)] {
                    assert_eq!(entries[f], Some(n), "{what}: entry count of {f}");
                }
                // The three activations on the stack at the fork, each resumed once by the child.
                assert_eq!(reentered(&show, "spawn_in_loop"), [(fork_line, 1)], "{what}");
                assert_eq!(reentered(&show, "run"), [(run_line, 1)], "{what}");
                assert_eq!(reentered(&show, "main").len(), 1, "{what}");
                let main_block = &function(&show, "main")["fork_reentries"][0];
                let b = &function(&show, "main")["blocks"][main_block["block"].as_u64().unwrap() as usize];
                assert!(b["lines"].as_array().unwrap().contains(&call_line.into()), "{what}: main re-entered at {b}");
                assert_eq!(reentered(&show, "child_work"), [], "{what}");

                // Each process's own file.
                let (child, parent) = &child_and_parent(&exe, &dir, &what);
                all_exact(child, &format!("{what} child"));
                all_exact(parent, &format!("{what} parent"));
                for s in &sources {
                    let want = child_expectations(s);
                    let got = marker_counts(child, s);
                    let merged_want = expectations(s);
                    let parent_got = marker_counts(parent, s);
                    for (line, c) in &want {
                        assert_eq!(got[line], Some(*c), "{what}: child {}:{line}", s.display());
                        let m = merged_want[line].1;
                        assert_eq!(parent_got[line], Some(m - c), "{what}: parent {}:{line}", s.display());
                    }
                }
                let child_entries = entry_counts(child);
                for (f, n) in [("spawn_in_loop", 0), ("run", 0), ("main", 0), ("child_work", 1)] {
                    assert_eq!(child_entries[f], Some(n), "{what}: child entry count of {f}");
                }
                assert_eq!(reentered(child, "spawn_in_loop"), [(fork_line, 1)], "{what}");
                assert_eq!(reentered(parent, "spawn_in_loop"), [], "{what}");
                // Merging the two files is the merged file.
                let summed = dir.join("summed.pathprof");
                let own = own_profiles(&dir);
                run_ok(Command::new(dist().join("bin/pathprof")).arg("merge").args(&own).arg("-o").arg(&summed));
                assert_eq!(show_json(&summed)["functions"], show["functions"], "{what}: merge of the %p files");
            }
        }
    }
}

/// Path mode, by hand (see fork_lib.c): spawn_in_loop's paths are cut at the loop's back edge. Per call, the
/// first iteration is a path from the entry and the others start at the loop header; the loop test that fails
/// ends a path at the return. Parent: 3 calls → 3 paths from the entry to the back edge without the fork
/// branch, 2 + 2 + 4 = 8 such paths from the header (the fork iteration is not among them), 3 paths from the
/// header to the return, and 1 path through the fork branch's parent side (waitpid) to the back edge. The child
/// ends one path through the child side (`child = 1`, break) at the return, whose prefix (header, fork call) ran
/// in the parent. The fork block's truncated path: 1 arrival (parent) − 2 continuations = −1, with 1 fork
/// re-entry: left abnormally 0 times. The waitpid block's truncated path: 1 arrival − 1 continuation = 0.
#[test]
fn path_counts_of_the_forking_loop() {
    let text = std::fs::read_to_string(programs().join("fork_lib.c")).unwrap();
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1;
    let (fork, child, wait) = (line_of("fork();"), line_of("child = 1;"), line_of("waitpid("));
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("fork-paths{opt}"));
        let exe = build(&dir, "path", opt, false);
        let prof = dir.join("merged.pathprof");
        run(&exe, &prof);
        let out = run_ok(Command::new(dist().join("bin/pathprof")).args(["decode", "--json"]).arg(&prof));
        let dec: Value = serde_json::from_slice(&out.stdout).unwrap();
        // (start, end, and which of three marked lines the path runs through) -> (count, fork re-entries).
        let mut got: BTreeMap<(String, String, Vec<bool>), (i64, i64)> = BTreeMap::new();
        for p in dec["paths"].as_array().unwrap().iter().filter(|p| p["function"] == "spawn_in_loop") {
            let slot = got.entry(path_key(p, &[fork, child, wait])).or_insert((0, 0));
            slot.0 += p["count"].as_i64().unwrap();
            slot.1 += p["fork_reentries"].as_i64().unwrap_or(0);
        }
        let k = |s: &str, e: &str, f: bool, c: bool, w: bool| (s.to_string(), e.to_string(), vec![f, c, w]);
        let want: BTreeMap<_, (i64, i64)> = [
            (k("entry", "back_edge", false, false, false), (3, 0)),
            (k("loop_header", "back_edge", false, false, false), (8, 0)),
            (k("loop_header", "exit", false, false, false), (3, 0)),
            (k("loop_header", "back_edge", true, false, true), (1, 0)),
            (k("loop_header", "exit", true, true, false), (1, 0)),
            (k("loop_header", "abnormal", true, false, false), (-1, 1)),
        ]
        .into_iter()
        .collect();
        assert_eq!(got, want, "{opt}: spawn_in_loop's paths (count, fork re-entries)");
    }
}

/// Block and edge counts derived from paths equal edge mode's for the forking program (context and piecewise
/// modes, whose graphs split call sites, equal each other).
#[test]
fn every_mode_derives_the_same_counts_for_the_forking_program() {
    let counts = |show: &Value| -> BTreeMap<String, Value> {
        let mut m = BTreeMap::new();
        for f in show["functions"].as_array().unwrap() {
            let name = f["name"].as_str().unwrap();
            m.insert(format!("{name} entry"), f["entry_count"].clone());
            m.insert(
                format!("{name} blocks"),
                Value::Array(f["blocks"].as_array().unwrap().iter().map(|b| b["count"].clone()).collect()),
            );
            m.insert(
                format!("{name} edges"),
                Value::Array(f["edges"].as_array().unwrap().iter().map(|e| e["count"].clone()).collect()),
            );
            m.insert(format!("{name} fork"), f["fork_reentries"].clone());
        }
        m
    };
    let mut by_mode = BTreeMap::new();
    for mode in MODES {
        let dir = scratch(&format!("fork-same-{mode}"));
        let exe = build(&dir, mode, "-O1", false);
        let prof = dir.join("merged.pathprof");
        run(&exe, &prof);
        by_mode.insert(mode, counts(&show_json(&prof)));
    }
    assert_eq!(by_mode["edge"], by_mode["path"]);
    assert_eq!(by_mode["context"], by_mode["piecewise"]);
}

/// vfork and posix_spawn in the same shape (vfork_loop.c): nothing changes for them — one profile file (with
/// `%p`), exact, no fork re-entry anywhere, the hand-derived counts in every mode, with and without
/// `--pathprof-atomic`.
#[test]
fn vfork_and_posix_spawn_stay_harmless() {
    let source = programs().join("vfork_loop.c");
    for mode in MODES {
        for atomic in [false, true] {
            let what = format!("{mode}{}", if atomic { " atomic" } else { "" });
            let dir = scratch(&format!("vfork-{mode}-{atomic}"));
            let exe = dir.join("prog");
            let mut cc = wrapper(false);
            cc.args(["-O1", &format!("--pathprof-mode={mode}")]);
            if atomic {
                cc.arg("--pathprof-atomic");
            }
            run_ok(cc.arg(&source).arg("-o").arg(&exe));
            run(&exe, &dir.join("own-%p.pathprof"));
            let files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "pathprof"))
                .collect();
            assert_eq!(files.len(), 1, "{what}: {files:?}");
            let show = show_json(&files[0]);
            for f in show["functions"].as_array().unwrap() {
                assert_eq!(f["exact"], true, "{what}: {} not exact: {}", f["name"], f["inexact_reasons"]);
                assert_eq!(f["fork_reentries"], Value::Array(vec![]), "{what}: {}", f["name"]);
            }
            assert_eq!(entry_counts(&show)["run"], Some(2), "{what}");
            if mode == "edge" || mode == "path" {
                assert_markers(&show, &source);
            }
        }
    }
}

/// An exception thrown in the child lands in the catch of an activation that was in flight at the fork
/// (fork_exception.cpp): the landing pad records the re-entry. Every mode, -O0 and -O2, merged and `%p` files
/// against the hand-derived counts; spawn's one abnormal exit (the child's throw) is the only one.
#[test]
fn exception_into_an_activation_in_flight_at_the_fork() {
    let source = programs().join("fork_exception.cpp");
    for mode in MODES {
        for opt in ["-O0", "-O2"] {
            let what = format!("{mode} {opt}");
            let dir = scratch(&format!("fork-exc-{mode}{opt}"));
            let exe = dir.join("prog");
            run_ok(wrapper(true).args([opt, &format!("--pathprof-mode={mode}")]).arg(&source).arg("-o").arg(&exe));
            let merged = dir.join("merged.pathprof");
            run(&exe, &merged);
            let (child, parent) = &child_and_parent(&exe, &dir, &what);
            let show = show_json(&merged);
            for (who, s, throws) in [("merged", &show, 1), ("child", child, 1), ("parent", parent, 0)] {
                for f in s["functions"].as_array().unwrap() {
                    assert_eq!(f["exact"], true, "{what} {who}: {} not exact: {}", f["name"], f["inexact_reasons"]);
                    let abnormal: u64 =
                        f["abnormal_exits"].as_array().unwrap().iter().map(|a| a["count"].as_u64().unwrap()).sum();
                    let want = if f["name"] == "_Z5spawnv" { throws } else { 0 };
                    assert_eq!(abnormal, want, "{what} {who}: abnormal exits of {}", f["name"]);
                }
            }
            assert_markers(&show, &source);
            let (want_child, merged_want) = (child_expectations(&source), expectations(&source));
            let (got_child, got_parent) = (marker_counts(child, &source), marker_counts(parent, &source));
            for (line, c) in &want_child {
                assert_eq!(got_child[line], Some(*c), "{what}: child line {line}");
                assert_eq!(got_parent[line], Some(merged_want[line].1 - c), "{what}: parent line {line}");
            }
            for f in ["_Z5spawnv", "_Z6middlev", "main"] {
                let n: u64 = function(&show, f)["fork_reentries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["count"].as_u64().unwrap())
                    .sum();
                assert_eq!(n, 1, "{what}: re-entries of {f}");
            }
        }
    }
}

/// A fork while two worker threads are in the middle of calls (fork_threads.c, `--pathprof-atomic`): only the
/// forking thread's activations are resumed in the child, one re-entry each (main, run, spawn); the merged
/// profile is exact in every mode and matches the hand-derived counts.
#[test]
fn fork_with_other_threads_in_flight() {
    let source = programs().join("fork_threads.c");
    for mode in MODES {
        let what = mode.to_string();
        let dir = scratch(&format!("fork-threads-{mode}"));
        let exe = dir.join("prog");
        run_ok(
            wrapper(false)
                .args(["-O2", "--pathprof-atomic", &format!("--pathprof-mode={mode}"), "-pthread"])
                .arg(&source)
                .arg("-o")
                .arg(&exe),
        );
        let merged = dir.join("merged.pathprof");
        run(&exe, &merged);
        let show = show_json(&merged);
        for f in show["functions"].as_array().unwrap() {
            assert_eq!(f["exact"], true, "{what}: {} not exact: {}", f["name"], f["inexact_reasons"]);
        }
        assert_markers(&show, &source);
        for (f, n) in [("main", 1), ("run", 1), ("spawn", 1), ("worker", 0), ("step", 0), ("child_work", 0)] {
            let got: u64 = function(&show, f)["fork_reentries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["count"].as_u64().unwrap())
                .sum();
            assert_eq!(got, n, "{what}: re-entries of {f}");
        }
    }
}

/// `--pathprof-fork-checks=0`: no checks (the metadata says so), and the forked child's resumed activations
/// make exactly the functions on the stack at the fork inexact — reported, never wrong.
#[test]
fn without_fork_checks_the_functions_on_the_stack_are_reported_inexact() {
    for mode in MODES {
        let dir = scratch(&format!("fork-nochecks-{mode}"));
        let lib = dir.join("libforklib.so");
        let flags = [format!("--pathprof-mode={mode}"), "--pathprof-fork-checks=0".to_string(), "-O1".to_string()];
        run_ok(
            wrapper(false)
                .args(&flags)
                .args(["-fPIC", "-shared"])
                .arg(programs().join("fork_lib.c"))
                .arg("-o")
                .arg(&lib),
        );
        let exe = dir.join("prog");
        run_ok(
            wrapper(false)
                .args(&flags)
                .arg(programs().join("fork_main.c"))
                .arg(&lib)
                .arg(format!("-Wl,-rpath,{}", dir.display()))
                .arg("-o")
                .arg(&exe),
        );
        let prof = dir.join("merged.pathprof");
        run(&exe, &prof);
        let show = show_json(&prof);
        for f in show["functions"].as_array().unwrap() {
            let on_stack = ["main", "run", "spawn_in_loop"].contains(&f["name"].as_str().unwrap());
            assert_eq!(f["exact"], !on_stack, "{mode}: {} {}", f["name"], f["inexact_reasons"]);
            assert_eq!(f["fork_reentries"], Value::Array(vec![]), "{mode}: {}", f["name"]);
        }
    }
}

/// The per-process profiles (`own-%p.pathprof`) a run wrote into `dir`.
/// Runs `exe` once more with a profile per process (`own-%p`) and returns the child's and the parent's
/// `show --json`; the child's is the one whose `main` never ran (the child starts inside it).
fn child_and_parent(exe: &Path, dir: &Path, what: &str) -> (Value, Value) {
    run(exe, &dir.join("own-%p.pathprof"));
    let own = own_profiles(dir);
    assert_eq!(own.len(), 2, "{what}: {own:?}");
    let mut shows: Vec<Value> = own.iter().map(|p| show_json(p)).collect();
    let child_at = shows.iter().position(|s| entry_counts(s)["main"] == Some(0)).expect("the child's file");
    let child = shows.swap_remove(child_at);
    (child, shows.pop().expect("two files"))
}

fn own_profiles(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("own-"))
        .filter(|p| p.extension().is_some_and(|e| e == "pathprof"))
        .collect()
}

/// fork_setjmp.c: a forked child that `longjmp`s back into an activation that was in flight at the fork resumes
/// it through `setjmp`, not through a call: the checks of the calls that activation makes afterwards must not
/// record a fork re-entry (each activation compares against the generation it last saw, which a `setjmp`
/// return brings up to date). Every counting mode that numbers paths or counts edges, -O0 and -O2: both
/// processes' own profiles and the merged one exact, the hand-derived counts, and exactly one fork re-entry:
/// forker's, in the child.
#[test]
fn a_longjmp_back_into_an_activation_in_flight_at_the_fork_is_no_fork_reentry() {
    let source = programs().join("fork_setjmp.c");
    let fork_line = line_of("fork_setjmp.c", "pid_t pid = fork();");
    for mode in ["edge", "path", "context", "piecewise"] {
        for opt in ["-O0", "-O2"] {
            let what = format!("{mode} {opt}");
            let dir = scratch(&format!("fork-setjmp-{mode}{opt}"));
            let exe = dir.join("prog");
            let mut cc = wrapper(false);
            run_ok(cc.arg(opt).arg(format!("--pathprof-mode={mode}")).arg(&source).arg("-o").arg(&exe));
            let merged = dir.join("merged.pathprof");
            run(&exe, &merged);
            let show = show_json(&merged);
            assert_markers(&show, &source);
            let (child, parent) = &child_and_parent(&exe, &dir, &what);
            for (s, who) in [(&show, "merged"), (child, "child"), (parent, "parent")] {
                for f in s["functions"].as_array().unwrap() {
                    assert_eq!(f["exact"], true, "{what} {who}: {} not exact: {}", f["name"], f["inexact_reasons"]);
                }
                assert_eq!(reentered(s, "main"), [], "{what} {who}: main has no fork re-entry");
            }
            assert_eq!(reentered(child, "forker"), [(fork_line, 1)], "{what}");
            assert_eq!(reentered(parent, "forker"), [], "{what}");
            let want = child_expectations(&source);
            let got = marker_counts(child, &source);
            for (line, c) in &want {
                assert_eq!(got[line], Some(*c), "{what}: child fork_setjmp.c:{line}");
            }
        }
    }
}
