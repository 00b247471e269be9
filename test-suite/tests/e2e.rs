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
                assert_eq!(
                    *got,
                    Some(*want),
                    "{name} {opt}: entry count of {f} (clang -fprofile-instr-generate says {want})"
                );
            }
        }
        for f in show["functions"].as_array().unwrap() {
            assert_eq!(
                f["exact"],
                serde_json::Value::Bool(true),
                "{name} {opt}: {} not exact: {}",
                f["name"],
                f["inexact_reasons"]
            );
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
fn promises_to_the_optimiser() {
    check_program("assume", &["assume.c"], &[]);
}

#[test]
fn call_that_never_returns() {
    check_program("noreturn_site", &["noreturn_site.c"], &[]);
}

/// Blocks no defined execution reaches (`unreachable` with nothing before it) get no code, so the optimiser still
/// deletes them and folds the branches into them, in every mode. Second method: plain clang-19 at -O2 keeps no
/// more of them. Before, `classify` and `insert` kept theirs behind volatile counter updates — and sed's regex,
/// which breaks such a promise, fell off the end of `re_node_set_insert` into the next function.
#[test]
fn promised_unreachable_blocks_stay_deletable() {
    let src = programs().join("assume.c");
    let dir = scratch("assume-ir");
    let body = |ll: &std::path::Path, f: &str| -> Vec<String> {
        let text = std::fs::read_to_string(ll).expect("read IR");
        let head = format!("@{f}(");
        let start = text
            .lines()
            .position(|l| l.starts_with("define") && l.contains(&head))
            .unwrap_or_else(|| panic!("{f} not in {}", ll.display()));
        text.lines().skip(start).take_while(|l| *l != "}").map(str::to_string).collect()
    };
    let unreachables = |lines: &[String]| lines.iter().filter(|l| l.trim_start().starts_with("unreachable")).count();
    let plain = dir.join("plain.ll");
    run_ok(Command::new("clang-19").args(["-O2", "-S", "-emit-llvm"]).arg(&src).arg("-o").arg(&plain));
    for mode in ["edge", "path", "context", "piecewise"] {
        let ll = dir.join(format!("{mode}.ll"));
        run_ok(
            wrapper(false).args(["-O2", "-S", "-emit-llvm"]).arg(&src).arg("-o").arg(&ll).env("PATHPROF_MODE", mode),
        );
        for f in ["classify", "insert"] {
            let (ours, theirs) = (body(&ll, f), body(&plain, f));
            assert!(ours.iter().any(|l| l.contains("__pathprof")), "{mode}: {f} not instrumented");
            assert_eq!(
                unreachables(&ours),
                unreachables(&theirs),
                "{mode}: `unreachable`s of {f}:\n{}",
                ours.join("\n")
            );
        }
    }
}

#[test]
fn loops_that_only_count() {
    check_program("count_nest", &["count_nest.c"], &[]);
}

/// Loops whose counts come from inlined callees, ended by longjmp and exit() from inside, hand-derived.
#[test]
fn loops_through_inlined_callees() {
    check_program("inlined_loops", &["inlined_loops.c"], &[]);
}

#[test]
fn loops_with_one_or_two_paths_per_iteration() {
    check_program("loop_paths", &["loop_paths.c"], &[]);
}

/// Lines containing `needle` in the blocks of `f` (an `.ll` file) that end in a branch marked `!llvm.loop`: the
/// latches, which in a loop of one block are the whole loop.
fn latch_lines_with(ll: &std::path::Path, f: &str, needle: &str) -> usize {
    let body = function_lines(ll, f);
    let mut n = 0;
    let mut block: Vec<&String> = Vec::new();
    for l in &body {
        if l.split_once(':').is_some_and(|(label, _)| !label.is_empty() && !label.starts_with(' ')) {
            block.clear(); // a block's label
        }
        block.push(l);
        if l.trim_start().starts_with("br ") && l.contains("!llvm.loop") {
            n += block.iter().filter(|b| b.contains(needle)).count();
        }
    }
    n
}

/// Back edges of `f` in an `.ll` file: branches to a block that comes earlier in the function's text.
fn back_edges(ll: &std::path::Path, f: &str) -> usize {
    let body = function_lines(ll, f);
    let mut seen: Vec<String> = vec!["%entry".into()];
    let mut n = 0;
    for l in &body[1..] {
        if let Some((label, _)) = l.split_once(':').filter(|(lb, _)| !lb.starts_with(' ') && !lb.is_empty()) {
            seen.push(format!("%{label}"));
        } else if l.trim_start().starts_with("br ") {
            n += l
                .split("label ")
                .skip(1)
                .filter(|t| seen.iter().any(|s| t.trim_end_matches([',', ' ']).split([',', ' ']).next() == Some(s)))
                .count();
        }
    }
    n
}

/// Lines of function `f` in an `.ll` file that contain `needle`.
fn lines_with(ll: &std::path::Path, f: &str, needle: &str) -> usize {
    function_lines(ll, f).iter().filter(|l| l.contains(needle)).count()
}

/// The lines of function `f`'s definition in an `.ll` file, from `define` to before its closing `}`.
fn function_lines(ll: &std::path::Path, f: &str) -> Vec<String> {
    let text = std::fs::read_to_string(ll).expect("read IR");
    let head = format!("@{f}(");
    text.lines()
        .skip_while(|l| !(l.starts_with("define") && l.contains(&head)))
        .take_while(|l| *l != "}")
        .map(String::from)
        .collect()
}

/// Counter promotion: a nest that only counts keeps its counters in registers. Edge mode: the optimiser folds
/// the whole nest to closed form as in the plain build (second method: plain clang-19 -O2 has no loop left in
/// `nest`); atomic builds too (one atomic add per exit). Path mode too: its loop resets
/// (`pathprof_core::ball_larus::resets`) restart the paths at each loop's entry, so every back edge and every
/// inner loop's entry counts one constant path number, a register the optimiser folds like the plain build's
/// counter (before the resets the outer loops stayed: their back edges' paths depended on whether the inner
/// loops iterated). Without promotion (`PATHPROF_PROMOTE=0`) all three loops stay and nothing folds. Context and
/// piecewise mode reset call-free loops too and fold alike; with Melski and Reps's paths
/// (`PATHPROF_LOOP_RESETS=0`) their nest stays a loop nest (92× IR PGO's instructions on the six-deep kernel).
/// The counts stay the hand-derived ones (`check_program("count_nest")`, every mode).
#[test]
fn promoted_counters_let_a_counting_nest_fold() {
    let src = programs().join("count_nest.c");
    let dir = scratch("promote-ir");
    let plain = dir.join("plain.ll");
    run_ok(Command::new("clang-19").args(["-O2", "-S", "-emit-llvm"]).arg(&src).arg("-o").arg(&plain));
    assert_eq!(back_edges(&plain, "nest"), 0, "plain clang-19 folds the nest");
    for mode in ["edge", "path", "context", "piecewise"] {
        for (name, promote, atomic) in [("on", "1", false), ("atomic", "1", true), ("off", "0", false)] {
            let ll = dir.join(format!("{mode}-{name}.ll"));
            let mut cc = wrapper(false);
            cc.args([&format!("--pathprof-mode={mode}"), "-O2", "-S", "-emit-llvm"])
                .arg(&src)
                .arg("-o")
                .arg(&ll)
                .env("PATHPROF_PROMOTE", promote);
            if atomic {
                cc.arg("--pathprof-atomic");
            }
            run_ok(&mut cc);
            let (loops, folded) = (back_edges(&ll, "nest"), lines_with(&ll, "nest", " = mul "));
            match (mode, promote) {
                (_, "1") => {
                    assert_eq!(loops, 0, "{mode} {name}: the promoted nest folds");
                    assert!(folded > 0, "{mode} {name}: to multiplications");
                }
                _ => {
                    assert!(loops >= 3, "{mode} {name}: unpromoted counters keep the three loops ({loops} back edges)");
                    assert_eq!(folded, 0, "{mode} {name}: nothing folds");
                }
            }
        }
    }
    for mode in ["context", "piecewise"] {
        let ll = dir.join(format!("{mode}-no-resets.ll"));
        let mut cc = wrapper(false);
        cc.args([&format!("--pathprof-mode={mode}"), "-O2", "-S", "-emit-llvm"]).arg(&src).arg("-o").arg(&ll);
        run_ok(cc.env("PATHPROF_LOOP_RESETS", "0"));
        assert!(back_edges(&ll, "nest") > 0, "{mode}: without resets the first iterations' paths keep loops");
    }
}

/// Promotion after inlining: a nest that counts only through an inlined callee (`one_more` in
/// `inlined_loops.c`) folds to closed form in edge mode, as the plain build's does (second method: plain clang-19
/// -O2 has no loop left in `nest`). Promoted at instrumentation only (`PATHPROF_PROMOTE=early`), the callee's
/// update lands in the innermost loop after inlining and keeps all three loops.
#[test]
fn promotion_after_inlining_lets_a_nest_through_a_callee_fold() {
    let src = programs().join("inlined_loops.c");
    let dir = scratch("promote-inlined-ir");
    let plain = dir.join("plain.ll");
    run_ok(Command::new("clang-19").args(["-O2", "-S", "-emit-llvm"]).arg(&src).arg("-o").arg(&plain));
    assert_eq!(back_edges(&plain, "nest"), 0, "plain clang-19 folds the nest");
    for (promote, atomic) in [("1", false), ("1", true), ("early", false)] {
        let ll = dir.join(format!("edge-{promote}-{atomic}.ll"));
        let mut cc = wrapper(false);
        cc.args(["--pathprof-mode=edge", "-O2", "-S", "-emit-llvm"]).arg(&src).arg("-o").arg(&ll);
        cc.env("PATHPROF_PROMOTE", promote);
        if atomic {
            cc.arg("--pathprof-atomic");
        }
        run_ok(&mut cc);
        let loops = back_edges(&ll, "nest");
        // sum_loop's loop: the inlined `classify` updates one of two counters through a select, and calls
        // `triple`, which LLVM cannot tell returns (its counter update is volatile) but pathprof proved safe.
        let in_loop = latch_lines_with(&ll, "sum_loop", "__pathprof_counters");
        if promote == "1" {
            assert_eq!(loops, 0, "atomic={atomic}: promoted after inlining, the nest folds");
            assert_eq!(in_loop, 0, "atomic={atomic}: sum_loop's loop keeps its counts in registers");
        } else {
            assert!(loops >= 3, "promoted early only, the inlined update keeps the three loops ({loops})");
            assert!(in_loop > 0, "promoted early only, sum_loop's loop updates counters in memory");
        }
    }
}

/// Edge mode keeps counters off the edges from a self-recursive call to the `ret` (`pass/src/weights.rs`), path
/// mode counts the path of `return fib(n - 1) + fib(n - 2)` before its calls (they are sure to return:
/// `path_mode::return_count_site`), and the interprocedural modes count or hand back before them (`fib` calls
/// only itself: `interproc_emit::FnEmitter::return_points`; its recursive calls go to a copy without the entry
/// check), so LLVM's tail-recursion elimination turns them into a call and a loop as in the plain build (second method: plain clang-19 -O2 keeps exactly one recursive call).
/// Counts stay those of the hand-derived `// expect` lines (`recursion.c` in every mode's count tests).
#[test]
fn every_mode_keeps_tail_recursion_elimination() {
    let src = programs().join("recursion.c");
    let dir = scratch("tail-recursion");
    let plain = dir.join("plain.ll");
    run_ok(Command::new("clang-19").args(["-O2", "-S", "-emit-llvm"]).arg(&src).arg("-o").arg(&plain));
    let plain_calls = lines_with(&plain, "fib", "call i32 @fib(");
    assert_eq!(plain_calls, 1, "plain clang-19 eliminates one of the two recursive calls");
    for mode in ["edge", "path", "context", "piecewise"] {
        for atomic in [false, true] {
            let ll = dir.join(format!("{mode}-{atomic}.ll"));
            let mut cmd = wrapper(false);
            cmd.arg(format!("--pathprof-mode={mode}")).args(["-O2", "-S", "-emit-llvm"]);
            if atomic {
                cmd.arg("--pathprof-atomic");
            }
            run_ok(cmd.arg(&src).arg("-o").arg(&ll));
            // The interprocedural modes' recursive calls go to the copy that skips the entry check
            // (`interproc_emit::call_root_copy_for_recursion`), which calls itself.
            let f = if matches!(mode, "context" | "piecewise") { "fib.pathprof.root" } else { "fib" };
            let callee = format!("@{f}(");
            let calls = function_lines(&ll, f).iter().filter(|l| l.contains(" call ") && l.contains(&callee)).count();
            assert_eq!(calls, plain_calls, "{mode} mode (atomic: {atomic}) keeps that");
        }
    }
}

/// The executed paths of a path profile as (function, path number, count), sorted.
fn paths_of(profile: &std::path::Path) -> Vec<(String, String, String)> {
    let d = decode_json(profile);
    let mut v: Vec<(String, String, String)> = d["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["function"].as_str().unwrap().to_string(), x["id"].to_string(), x["count"].to_string()))
        .collect();
    v.sort();
    v
}

/// Promotion changes where counts wait, never what they are: every program's profile at -O2 is the same with
/// and without it, in edge mode (counts) and the path modes (every path's count: path, context, piecewise),
/// atomic too, including programs that leave loops by exit(), longjmp, exceptions and computed gotos.
#[test]
fn promoted_counts_equal_unpromoted_counts() {
    let shapes: Vec<_> = single_source_programs(SHAPE_PROGRAMS)
        .into_iter()
        .chain(single_source_programs("count_nest.c loop_paths.c inlined_loops.c"))
        .collect();
    for mode in ["edge", "path", "context", "piecewise"] {
        for (name, srcs) in &shapes {
            let srcs = &srcs[..];
            for atomic in [false, true] {
                let extra: &[&str] = if atomic { &["--pathprof-atomic"] } else { &[] };
                let profile = |promote: &str| {
                    let dir =
                        scratch(&format!("{name}-{mode}-promote{promote}{}", if atomic { "-atomic" } else { "" }));
                    let cxx = srcs.iter().any(|s| s.ends_with(".cpp"));
                    let exe = dir.join("prog");
                    let sources: Vec<PathBuf> = srcs.iter().map(|s| programs().join(s)).collect();
                    run_ok(
                        wrapper(cxx)
                            .arg("-O2")
                            .args(&sources)
                            .args(extra)
                            .arg("-o")
                            .arg(&exe)
                            .env("PATHPROF_MODE", mode)
                            .env("PATHPROF_PROMOTE", promote),
                    );
                    let prof = dir.join("out.pathprof");
                    let _ = Command::new(&exe).env("PATHPROF_FILE", &prof).output().expect("run program");
                    assert!(prof.exists(), "{name}: no profile");
                    dir.hold(prof)
                };
                let (on, off) = (profile("1"), profile("0"));
                let (on_json, off_json) = (show_json(&on), show_json(&off));
                for report in [&on_json, &off_json] {
                    let left_out = &report["not_profiled"];
                    assert_eq!(left_out.as_array().map(Vec::len), Some(0), "{name} {mode}: {left_out}");
                }
                let (a, b) = (counts_of(&on_json), counts_of(&off_json));
                assert_eq!(a.len(), b.len(), "{name} {mode}: different graphs");
                for (k, v) in &b {
                    assert!(v.is_some(), "{name} {mode}: {k} not exact without promotion");
                    assert_eq!(a.get(k), Some(v), "{name} {mode} atomic={atomic}: {k}");
                }
                if mode != "edge" {
                    assert_eq!(paths_of(&on), paths_of(&off), "{name} {mode} atomic={atomic}: path counts differ");
                }
            }
        }
    }
}

/// A shared object linked by hand without `--exclude-libs` shares the executable's exported runtime copy; it
/// is dlopened and dlclosed twice. Its module's destructor (emitted by the pass) unregisters it at each
/// dlclose. Before, the exit dump read the unmapped descriptor and the program crashed at exit.
#[test]
fn dlclosed_library_sharing_the_program_runtime() {
    let dir = scratch("dl-shared-runtime");
    let plugin = format!("-fpass-plugin={}", dist().join("lib/libpathprof.so").display());
    let rt = dist().join("lib/libpathprof_rt.a");
    // path+sparse: `work` counts in a sparse region, which each dlopen maps and each dlclose unmaps.
    for label in ["edge", "path", "context", "path+sparse"] {
        let lib = dir.join("libdl_lib.so");
        let (mode, array_max) = label.split_once('+').map_or((label, "4096"), |(m, _)| (m, "1"));
        run_ok(
            Command::new("clang-19")
                .args(["-O1", "-g", "-fPIC", "-shared", &plugin])
                .arg(programs().join("dl_lib.c"))
                .arg("-Wl,--whole-archive")
                .arg(&rt)
                .arg("-Wl,--no-whole-archive")
                .arg("-o")
                .arg(&lib)
                .env("PATHPROF_MODE", mode)
                .env("PATHPROF_PATH_ARRAY_MAX", array_max),
        );
        let exe = dir.join("prog");
        run_ok(
            Command::new("clang-19")
                .args(["-O1", "-g", "-rdynamic", &plugin])
                .arg(programs().join("dl_main.c"))
                .arg(&rt)
                .args(["-ldl", "-o"])
                .arg(&exe)
                .env("PATHPROF_MODE", mode),
        );
        let prof = dir.join(format!("{label}.pathprof"));
        let out = Command::new(&exe).current_dir(&dir).env("PATHPROF_FILE", &prof).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{label}: {}", String::from_utf8_lossy(&out.stderr));
        let show = show_json(&prof);
        assert_eq!(entry_counts(&show).get("work"), Some(&Some(2)), "{label}");
        for src in ["dl_lib.c", "dl_main.c"] {
            assert_markers(&show, &programs().join(src));
        }
    }
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
fn loop_without_exit_left_by_exit() {
    check_program("noexit_loop", &["noexit_loop.c"], &[]);
}

#[test]
fn longjmp_across_frames() {
    check_program("longjmp", &["longjmp.c"], &[]);
}

#[test]
fn builtin_setjmp_and_longjmp() {
    check_program("builtin_setjmp", &["builtin_setjmp.c"], &[]);
}

#[test]
fn cxx_exception_thrown_and_caught() {
    check_program("exception", &["exception.cpp"], &[]);
}

#[test]
fn cxx_containers_exceptions_and_computed_goto() {
    check_program("cxx_mix", &["cxx_mix.cpp"], &[]);
}

#[test]
fn two_translation_units() {
    check_program("two_tu", &["two_tu_main.c", "two_tu_util.c"], &[]);
}

#[test]
fn four_threads_atomic_counters_are_exact() {
    for mode in ["edge", "path"] {
        for opt in ["-O0", "-O2"] {
            let env = [("PATHPROF_ATOMIC", "1"), ("PATHPROF_MODE", mode)];
            let show = profile_of(&format!("threads-{mode}{opt}"), &["threads.c"], opt, &env, &["-pthread"]);
            assert_markers(&show, &programs().join("threads.c"));
            assert_eq!(entry_counts(&show)["work"], Some(400_000));
            assert_eq!(entry_counts(&show)["run"], Some(4));
        }
    }
    // Path tables under threads: every function hashed, through the default cache, a one-pair cache (work's two
    // paths share it: one keeps it, the other goes to the table, concurrently) and no cache.
    for cache in ["", "1", "0"] {
        let env = [
            ("PATHPROF_ATOMIC", "1"),
            ("PATHPROF_MODE", "path"),
            ("PATHPROF_PATH_ARRAY_MAX", "1"),
            ("PATHPROF_PATH_SPARSE_MAX", "1"),
            ("PATHPROF_PATH_CACHE", cache),
        ];
        let show = profile_of(&format!("threads-hashed-cache{cache}"), &["threads.c"], "-O2", &env, &["-pthread"]);
        assert_markers(&show, &programs().join("threads.c"));
        assert_eq!(entry_counts(&show)["work"], Some(400_000), "cache {cache:?}");
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
            .args(["-O2", "-c", "--pathprof-stats", "--pathprof-mode=edge"])
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
        let show =
            profile_of(&format!("lto{lto}"), &["two_tu_main.c", "two_tu_util.c"], "-O2", &[], &[lto, "-fuse-ld=lld"]);
        assert_markers(&show, &programs().join("two_tu_util.c"));
        let names: Vec<_> =
            show["functions"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_string()).collect();
        let mut dedup = names.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(names.len(), dedup.len(), "{lto}: a function was instrumented twice: {names:?}");
    }
    let dir = scratch("opt");
    let ll = dir.join("loops.ll");
    run_ok(
        Command::new("clang-19")
            .args(["-O0", "-g", "-S", "-emit-llvm", "-Xclang", "-disable-O0-optnone"])
            .arg(programs().join("loops.c"))
            .arg("-o")
            .arg(&ll),
    );
    let out = run_ok(
        Command::new("opt-19")
            .arg(format!("-load-pass-plugin={}", dist().join("lib/libpathprof.so").display()))
            .args(["-passes=pathprof", "-S"])
            .arg(&ll),
    );
    let ir = String::from_utf8_lossy(&out.stdout);
    assert!(ir.contains("__pathprof_register_module"), "opt output has no registration");
}

/// `pathprof decode --json FILE`, parsed.
fn decode_json(profile: &std::path::Path) -> serde_json::Value {
    let out = run_ok(Command::new(dist().join("bin/pathprof")).arg("decode").arg("--json").arg(profile));
    serde_json::from_slice(&out.stdout).expect("decode --json prints JSON")
}

/// Compiles and runs in the given mode; returns the profile path.
fn run_in_mode(name: &str, sources: &[&str], opt: &str, mode: &str, extra: &[&str]) -> InScratch {
    let dir = scratch(name);
    let cxx = sources.iter().any(|s| s.ends_with(".cpp"));
    let exe = dir.join("prog");
    let srcs: Vec<PathBuf> = sources.iter().map(|s| programs().join(s)).collect();
    run_ok(wrapper(cxx).arg(opt).args(&srcs).args(extra).arg("-o").arg(&exe).env("PATHPROF_MODE", mode));
    let prof = dir.join("out.pathprof");
    let _ = Command::new(&exe).env("PATHPROF_FILE", &prof).output().expect("run program");
    assert!(prof.exists(), "{name}: no profile");
    dir.hold(prof)
}

/// Block and edge counts per function, as (function, block/edge key) -> count.
fn counts_of(show: &serde_json::Value) -> std::collections::BTreeMap<String, Option<u64>> {
    let mut m = std::collections::BTreeMap::new();
    for f in show["functions"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        m.insert(format!("{name} entry"), f["entry_count"].as_u64());
        for b in f["blocks"].as_array().unwrap() {
            m.insert(format!("{name} bb{}", b["id"]), b["count"].as_u64());
        }
        for (i, e) in f["edges"].as_array().unwrap().iter().enumerate() {
            m.insert(format!("{name} edge#{i} {}->{}", e["from"], e["to"]), e["count"].as_u64());
        }
    }
    m
}

/// The old LLVM PathProfileVerifier idea: edge and block counts derived from path counts must equal what edge
/// mode measures for the same run, for every test program, at -O0 and -O2.
#[test]
fn path_derived_counts_equal_edge_mode_counts() {
    let programs: &[(&str, &[&str], &[&str])] = &[
        ("loops", &["loops.c"], &[]),
        ("gotos", &["gotos.c"], &[]),
        ("switch", &["switch.c"], &[]),
        ("recursion", &["recursion.c"], &[]),
        ("exit_deep", &["exit_deep.c"], &[]),
        ("noexit_loop", &["noexit_loop.c"], &[]),
        ("longjmp", &["longjmp.c"], &[]),
        ("builtin_setjmp", &["builtin_setjmp.c"], &[]),
        ("exception", &["exception.cpp"], &[]),
        ("cxx_mix", &["cxx_mix.cpp"], &[]),
        ("two_tu", &["two_tu_main.c", "two_tu_util.c"], &[]),
        ("paths_mod", &["paths_mod.c"], &[]),
        ("eighty_ifs", &["eighty_ifs.c"], &[]),
        ("demo", &["../../examples/demo.c"], &[]),
        ("assume", &["assume.c"], &[]),
        ("loop_paths", &["loop_paths.c"], &[]),
        // Returns through one shared block, from constant and run-time path numbers, one after an exit.
        ("shared_returns", &["shared_returns.c"], &[]),
    ];
    for (name, srcs, extra) in programs {
        for opt in ["-O0", "-O2"] {
            // Full debug info (-g): debug records sit at block starts where the pass inserts PHIs.
            let extra: Vec<&str> = extra.iter().copied().chain(["-g"]).collect();
            let edge = show_json(&run_in_mode(&format!("{name}-edge{opt}"), srcs, opt, "edge", &extra));
            let path = show_json(&run_in_mode(&format!("{name}-path{opt}"), srcs, opt, "path", &extra));
            assert_eq!(path["functions"][0]["mode"], "path");
            let (e, p) = (counts_of(&edge), counts_of(&path));
            assert_eq!(e.len(), p.len(), "{name} {opt}: different graphs");
            for (k, v) in &e {
                assert!(v.is_some(), "{name} {opt}: edge-mode count {k} not exact");
                assert_eq!(p.get(k), Some(v), "{name} {opt}: {k}: path-derived count differs from edge mode");
            }
            for f in path["functions"].as_array().unwrap() {
                assert_eq!(f["exact"], true, "{name} {opt}: {} not exact: {}", f["name"], f["inexact_reasons"]);
            }
        }
    }
}

/// A path that ends by entering a reset loop is reported as such (`loop_entry`), not as a cut of the path budget,
/// and the next path starts at the loop's header. Hand-derived (count_nest.c, path mode): `nest(20)` enters its
/// outer loop once, the middle loop 20 times and the inner loop 400 times (1 + 420 paths end entering a loop);
/// 8000 + 400 + 20 back edges; one exit from the outer loop's header. `sieve(100)` enters its outer loop once and
/// the inner loop once per prime below 100 (25); 98 + 102 back edges. With `--pathprof-loop-resets=0` no path
/// ends entering a loop, in any mode; in context and piecewise mode the nest's three loops reset too (421 paths).
#[test]
fn paths_that_enter_a_reset_loop_are_reported_as_loop_entries() {
    let ends = |profile: &std::path::Path| {
        let mut got = std::collections::BTreeMap::new();
        for p in decode_json(profile)["paths"].as_array().unwrap() {
            let key = (p["function"].as_str().unwrap().to_string(), p["start"].as_str().unwrap().to_string());
            *got.entry((key, p["end"].as_str().unwrap().to_string())).or_insert(0u64) += p["count"].as_u64().unwrap();
        }
        got
    };
    let k = |f: &str, s: &str, e: &str| ((f.to_string(), s.to_string()), e.to_string());
    for opt in ["-O0", "-O2"] {
        let got = ends(&run_in_mode(&format!("loop-entry-path{opt}"), &["count_nest.c"], opt, "path", &[]));
        let want: std::collections::BTreeMap<_, u64> = [
            (k("main", "entry", "exit"), 1),
            (k("nest", "entry", "loop_entry"), 1),
            (k("nest", "loop_header", "loop_entry"), 420),
            (k("nest", "loop_header", "back_edge"), 8420),
            (k("nest", "loop_header", "exit"), 1),
            (k("sieve", "entry", "loop_entry"), 1),
            (k("sieve", "loop_header", "loop_entry"), 25),
            (k("sieve", "loop_header", "back_edge"), 200),
            (k("sieve", "loop_header", "exit"), 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(got, want, "{opt}: path mode's paths by start and end");
        for mode in ["path", "context", "piecewise"] {
            let off = ends(&run_in_mode(
                &format!("loop-entry-{mode}-off{opt}"),
                &["count_nest.c"],
                opt,
                mode,
                &["--pathprof-loop-resets=0"],
            ));
            assert!(off.keys().all(|(_, e)| e != "loop_entry" && e != "cut"), "{opt} {mode} without resets: {off:?}");
        }
        for mode in ["context", "piecewise"] {
            let got = ends(&run_in_mode(&format!("loop-entry-{mode}{opt}"), &["count_nest.c"], opt, mode, &[]));
            let entering: u64 = got.iter().filter(|(key, _)| key.1 == "loop_entry").map(|(_, c)| c).sum();
            assert_eq!(entering, 421, "{opt} {mode}: {got:?}");
            assert!(got.keys().all(|(_, e)| e != "cut"), "{opt} {mode}: no budget cut in count_nest.c: {got:?}");
        }
    }
}

/// A loop with many exits and many counters (dfa_scanner.c: 32 chained states of a re2c-style scanner, each a
/// way out) promotes no more counters than its exits can flush within the region's budget
/// (`promote::MAX_FLUSHES_PER_REGION`): every exit flushes every promoted counter, so such a function grew by
/// exits × counters (this one to 37× its unpromoted IR; cmark's `_scan_autolink_email` took 161 s to compile).
/// Second method: its IR at -O2 stays under 10× the build without promotion, and the counts equal those of that
/// build and of path mode.
#[test]
fn promotion_of_a_loop_with_many_exits_stays_within_its_flush_budget() {
    let src = programs().join("dfa_scanner.c");
    let dir = scratch("dfa-promote");
    let ir_lines = |name: &str, extra: &[&str]| {
        let ll = dir.join(format!("{name}.ll"));
        run_ok(
            wrapper(false)
                .args(["--pathprof-mode=edge", "-O2", "-S", "-emit-llvm"])
                .args(extra)
                .arg(&src)
                .arg("-o")
                .arg(&ll),
        );
        function_lines(&ll, "scan").len()
    };
    let (promoted, unpromoted) = (ir_lines("promoted", &[]), ir_lines("unpromoted", &["--pathprof-promote=0"]));
    assert!(promoted < 10 * unpromoted, "scan: {promoted} IR lines promoted, {unpromoted} without promotion");
    for opt in ["-O0", "-O2"] {
        let counts = |mode: &str, extra: &[&str]| {
            let tag = extra.first().map_or("", |_| "-unpromoted");
            counts_of(&show_json(&run_in_mode(&format!("dfa-{mode}{tag}{opt}"), &["dfa_scanner.c"], opt, mode, extra)))
        };
        let edge = counts("edge", &[]);
        assert!(edge.values().all(Option::is_some), "{opt}: edge mode exact");
        assert_eq!(edge, counts("edge", &["--pathprof-promote=0"]), "{opt}: promoted against unpromoted");
        assert_eq!(edge, counts("path", &[]), "{opt}: edge mode against path mode");
    }
}

/// Hand-derived path counts (see the comment in paths_mod.c): the loop body's four branch combinations.
#[test]
fn path_counts_follow_from_arithmetic() {
    let src = programs().join("paths_mod.c");
    let text = std::fs::read_to_string(&src).unwrap();
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1;
    let (three, five) = (line_of("three();"), line_of("five();"));
    for opt in ["-O0", "-O2"] {
        let dec = decode_json(&run_in_mode(&format!("paths_mod{opt}"), &["paths_mod.c"], opt, "path", &[]));
        assert_eq!(dec["mode"], "path");
        let mut got = std::collections::BTreeMap::new();
        for p in dec["paths"].as_array().unwrap().iter().filter(|p| p["function"] == "main") {
            *got.entry(path_key(p, &[three, five])).or_insert(0u64) += p["count"].as_u64().unwrap();
        }
        let k = |s: &str, e: &str, t: bool, f: bool| (s.to_string(), e.to_string(), vec![t, f]);
        let want: std::collections::BTreeMap<_, u64> = [
            (k("entry", "back_edge", true, true), 1),         // i = 0
            (k("loop_header", "back_edge", true, true), 19),  // i % 15 == 0, i in 1..300
            (k("loop_header", "back_edge", true, false), 80), // i % 3 == 0 only
            (k("loop_header", "back_edge", false, true), 40), // i % 5 == 0 only
            (k("loop_header", "back_edge", false, false), 160),
            (k("loop_header", "exit", false, false), 1), // the final test of i < 300
        ]
        .into_iter()
        .collect();
        assert_eq!(got, want, "{opt}: main's path counts");
        let three_paths: u64 = dec["paths"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["function"] == "three")
            .map(|p| p["count"].as_u64().unwrap())
            .sum();
        assert_eq!(three_paths, 100);
    }
}

/// 2^80 paths: the path space is cut below 2^63, the program runs, and every executed path decodes.
#[test]
fn eighty_sequential_ifs_run_and_decode_exactly() {
    let prof = run_in_mode("eighty", &["eighty_ifs.c"], "-O2", "path", &[]);
    let dec = decode_json(&prof);
    let f_paths: Vec<_> = dec["paths"].as_array().unwrap().iter().filter(|p| p["function"] == "f").collect();
    assert!(!f_paths.is_empty());
    // Every call of f starts exactly one path at its entry.
    let from_entry: u64 = f_paths.iter().filter(|p| p["start"] == "entry").map(|p| p["count"].as_u64().unwrap()).sum();
    assert_eq!(from_entry, 1000);
    for p in &f_paths {
        let id = &p["id"];
        let n: u128 = id.as_u64().map(u128::from).or_else(|| id.as_str().and_then(|s| s.parse().ok())).unwrap();
        assert!(n < 1u128 << 63, "path number {n} is not below 2^63");
    }
    assert_eq!(entry_counts(&show_json(&prof))["f"], Some(1000));
}

/// Dynamic counter increments of an edge-mode run: the sum of the counts of instrumented edges.
fn dynamic_increments(show: &serde_json::Value) -> u64 {
    show["functions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["edges"].as_array().unwrap().iter())
        .filter(|e| e["instrumented"] == true)
        .map(|e| e["count"].as_u64().unwrap())
        .sum()
}

/// BL94 §3.2: with exact weights (`profile:FILE`) the maximum spanning tree minimises the counter increments
/// executed, so no other weighting can do better on the same run; and counts stay exact whatever the weights.
#[test]
fn exact_profile_weights_minimise_dynamic_increments() {
    let srcs = ["../../examples/demo.c"];
    let train = run_in_mode("weights-train", &srcs, "-O2", "edge", &[]);
    let train_show = show_json(&train);
    let mut costs = Vec::new();
    for w in ["uniform", "bl94", "llvm", &format!("profile:{}", train.display())] {
        let dir = scratch("weights");
        let exe = dir.join("prog");
        let out = run_ok(
            wrapper(false)
                .args(["-O2", "--pathprof-stats"])
                .arg(programs().join(srcs[0]))
                .arg("-o")
                .arg(&exe)
                .env("PATHPROF_MODE", "edge")
                .env("PATHPROF_WEIGHTS", w),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("weighting_fallbacks=0"), "{w}: {err}");
        let prof = dir.join("out.pathprof");
        run_ok(Command::new(&exe).env("PATHPROF_FILE", &prof));
        let show = show_json(&prof);
        // Same run, same exact counts, whatever the weights.
        assert_eq!(counts_of(&show), counts_of(&train_show), "{w}: counts differ");
        costs.push((w.to_string(), dynamic_increments(&show)));
    }
    let exact = costs.last().unwrap().1;
    for (w, c) in &costs {
        assert!(exact <= *c, "profile weights ({exact} increments) lost to {w} ({c})");
    }
}

/// Functions above `PATHPROF_PATH_ARRAY_MAX` paths count into run-time hash tables: forcing every function
/// there must give exactly the paths and counts of dense arrays (also with atomic updates).
#[test]
fn hashed_path_storage_matches_dense_storage() {
    for (name, srcs) in [("loops", &["loops.c"][..]), ("exception", &["exception.cpp"]), ("longjmp", &["longjmp.c"])] {
        let dense = run_in_mode(&format!("{name}-dense"), srcs, "-O2", "path", &[]);
        // Hashed: every function above one path (atomic without a cache: straight into the table; through a
        // one-pair cache: non-atomic, updates evict each other; atomic, the first path keeps the pair and the
        // others go to the table); sparse regions: every function above one path, up to 2^22.
        for (kind, sparse_max, stat, flags) in [
            ("hashed", "1", "hashed_functions=0", &["--pathprof-atomic", "--pathprof-path-cache=0"][..]),
            ("hashed-cached", "1", "hashed_functions=0", &["--pathprof-path-cache=1"]),
            ("hashed-cached-atomic", "1", "hashed_functions=0", &["--pathprof-atomic", "--pathprof-path-cache=1"]),
            ("sparse", "4194304", "sparse_functions=0", &["--pathprof-atomic"]),
        ] {
            let dir = scratch(&format!("{name}-{kind}"));
            let cxx = srcs[0].ends_with(".cpp");
            let exe = dir.join("prog");
            let sources: Vec<PathBuf> = srcs.iter().map(|s| programs().join(s)).collect();
            let out = run_ok(
                wrapper(cxx)
                    .args(["-O2", "--pathprof-stats"])
                    .args(flags)
                    .args(&sources)
                    .arg("-o")
                    .arg(&exe)
                    .env("PATHPROF_MODE", "path")
                    .env("PATHPROF_PATH_ARRAY_MAX", "1")
                    .env("PATHPROF_PATH_SPARSE_MAX", sparse_max),
            );
            assert!(!String::from_utf8_lossy(&out.stderr).contains(stat), "{name}: nothing {kind}");
            let other = dir.join("out.pathprof");
            let _ = Command::new(&exe).env("PATHPROF_FILE", &other).output().unwrap();
            assert_eq!(paths_of(&dense), paths_of(&other), "{name}: {kind} paths differ from dense paths");
            assert_eq!(
                counts_of(&show_json(&dense)),
                counts_of(&show_json(&other)),
                "{name}: {kind}: derived counts differ"
            );
        }
    }
}

/// Sparse regions are mapped by the runtime, not placed in the image: a conservative garbage collector scans every
/// writable segment of an image as roots, and libgc's test_cpp failed (its collections paced by 32 MiB of
/// regions in `.bss`). early_sparse.c's `wide` (2^20 paths) runs 8 times before any constructor (from
/// `.preinit_array`: its module has not registered, its region is not mapped) and 24 times from `main`: `wide`
/// is entered 32 times, and each of its counts equals edge mode's, in each path-numbering mode. sparse_vla.c's
/// `wide` allocates a variable-length array in its entry block, whose `alloca` the region's entry code must
/// leave after the size it takes (moved with the static ones, it broke the IR and crashed clang at -O2).
#[test]
fn sparse_regions_are_mapped_at_run_time_and_count_calls_before_registration() {
    let edge = run_in_mode("early-sparse-edge", &["early_sparse.c"], "-O2", "edge", &[]);
    // Only `wide`'s: the interprocedural modes cut their callers' blocks at call sites.
    let of_wide = |p: &std::path::Path| {
        let mut c = counts_of(&show_json(p));
        c.retain(|k, _| k.starts_with("wide "));
        c
    };
    let edge_counts = of_wide(&edge);
    assert_eq!(edge_counts.get("wide entry"), Some(&Some(32)), "edge mode: hand-derived entries of wide");
    for mode in ["path", "context", "piecewise"] {
        let dir = scratch(&format!("early-sparse-{mode}"));
        let exe = dir.join("prog");
        let out = run_ok(
            wrapper(false)
                .args(["-O2", "--pathprof-stats"])
                .arg(programs().join("early_sparse.c"))
                .arg("-o")
                .arg(&exe)
                .env("PATHPROF_MODE", mode)
                .env("PATHPROF_PATH_SPARSE_MAX", "67108864"),
        );
        let stats = String::from_utf8_lossy(&out.stderr);
        assert!(stats.contains("sparse_functions=1") || stats.contains("sparse_units=1"), "{mode}: no region: {stats}");
        let segments = run_ok(Command::new("llvm-readelf-19").arg("-lW").arg(&exe));
        let writable: u64 = String::from_utf8_lossy(&segments.stdout)
            .lines()
            .filter(|l| l.trim_start().starts_with("LOAD") && l.contains(" RW "))
            .map(|l| u64::from_str_radix(l.split_whitespace().nth(5).unwrap().trim_start_matches("0x"), 16).unwrap())
            .sum();
        assert!(writable < 1 << 20, "{mode}: {writable} bytes of writable segments: the 8 MiB region is in the image");
        let prof = dir.join("out.pathprof");
        let run = Command::new(&exe).env("PATHPROF_FILE", &prof).output().unwrap();
        assert!(run.status.success(), "{mode}: {run:?}");
        assert_eq!(of_wide(&prof), edge_counts, "{mode}: counts differ from edge mode's");
    }
    let edge = run_in_mode("sparse-vla-edge", &["sparse_vla.c"], "-O2", "edge", &[]);
    let edge_counts = of_wide(&edge);
    assert_eq!(edge_counts.get("wide entry"), Some(&Some(100)), "sparse_vla.c, edge mode: hand-derived entries");
    for opt in ["-O0", "-O2"] {
        let path = run_in_mode(&format!("sparse-vla{opt}"), &["sparse_vla.c"], opt, "path", &[]);
        let counts = of_wide(&path);
        assert_eq!(counts.get("wide entry"), Some(&Some(100)), "sparse_vla.c {opt}");
        if opt == "-O2" {
            assert_eq!(counts, edge_counts, "sparse_vla.c: counts differ from edge mode's");
        }
    }
}

/// `PATHPROF_USE`: branch weights and entry counts attached at the same pipeline point equal the exact counts
/// (hand-derived for loops.c), every function of an unchanged program is annotated, and a profile from a
/// different CFG (another -O level changes clang's CFG) is skipped with a warning, never applied.
#[test]
fn use_mode_attaches_exact_branch_weights() {
    let prof = run_in_mode("use-train", &["loops.c"], "-O0", "path", &[]);
    let dir = scratch("use");
    let ll = dir.join("loops.ll");
    let out = run_ok(
        wrapper(false)
            .args(["-O0", "-S", "-emit-llvm", "--pathprof-stats"])
            .arg(format!("--pathprof-use={}", prof.display()))
            .arg(programs().join("loops.c"))
            .arg("-o")
            .arg(&ll),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("annotated=4 mismatched=0 missing=0"), "{err}");
    let ir = std::fs::read_to_string(&ll).unwrap();
    let weights: Vec<String> = ir
        .lines()
        .filter_map(|l| {
            l.split_once("!{!\"branch_weights\", ").map(|(_, w)| w.trim_end_matches('}').replace("i32 ", ""))
        })
        .collect();
    // i < 1000 (1000 true, 1 false); i % 3 == 0 (334/666); i % 5 == 0 (200/800); i < 10 (10/1); j < i (45/10).
    for want in ["1000, 1", "334, 666", "200, 800", "10, 1", "45, 10"] {
        assert!(weights.iter().any(|w| w == want), "branch weights {want} not in {weights:?}");
    }
    let entries: Vec<&str> = ir.lines().filter(|l| l.contains("function_entry_count")).collect();
    for want in ["i64 334}", "i64 200}", "i64 800}", "i64 1}"] {
        assert!(entries.iter().any(|l| l.ends_with(want)), "entry count {want} not in {entries:?}");
    }
    assert!(ir.contains("!\"ProfileSummary\""), "no profile summary");

    // An -O2 compile has a different front-end CFG for main: skipped and reported, not annotated.
    let out = run_ok(
        wrapper(false)
            .args(["-O2", "-c", "--pathprof-stats"])
            .arg(format!("--pathprof-use={}", prof.display()))
            .arg(programs().join("loops.c"))
            .arg("-o")
            .arg(dir.join("loops.o")),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mismatched=1") && err.contains("stale profile"), "{err}");

    // Another program of the build, one the training run never ran (bzip2recover beside bzip2): its `main` is
    // not the trained program's `main` — missing from the profile, not stale.
    let out = run_ok(
        wrapper(false)
            .args(["-O0", "-c", "--pathprof-stats"])
            .arg(format!("--pathprof-use={}", prof.display()))
            .arg(programs().join("switch.c"))
            .arg("-o")
            .arg(dir.join("switch.o")),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("annotated=0 mismatched=0 missing=4") && !err.contains("stale"), "{err}");
}

/// Use mode with a profile whose counts are not exact (threads.c's four threads on non-atomic counters): the
/// functions are skipped as not exact — same sources, so not stale, which would send the user to retrain for
/// nothing — and with a profile of atomic counters every function is annotated.
#[test]
fn use_mode_tells_inexact_counts_from_a_stale_profile() {
    let dir = scratch("use-inexact");
    for (name, extra, want) in [
        ("nonatomic", &[][..], None),
        ("atomic", &["--pathprof-atomic"][..], Some("annotated=3 mismatched=0 missing=0 inexact=0")),
    ] {
        let prof = run_in_mode(&format!("use-inexact-train-{name}"), &["threads.c"], "-O0", "edge", extra);
        let show = show_json(&prof);
        let exact: Vec<bool> = show["functions"].as_array().unwrap().iter().map(|f| f["exact"] == true).collect();
        let out = run_ok(
            wrapper(false)
                .args(["-O0", "-c", "--pathprof-stats"])
                .arg(format!("--pathprof-use={}", prof.display()))
                .arg(programs().join("threads.c"))
                .arg("-o")
                .arg(dir.join(format!("{name}.o"))),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("stale"), "{name}: {err}");
        match want {
            Some(line) => {
                assert!(exact.iter().all(|&e| e), "{name}: {show}");
                assert!(err.contains(line), "{name}: {err}");
            }
            None => {
                let inexact = exact.iter().filter(|&&e| !e).count();
                assert!(inexact >= 2, "{name}: run() and work() ran in four threads: {show}");
                let line = format!("annotated={} mismatched=0 missing=0 inexact={inexact}", 3 - inexact);
                assert!(err.contains(&line) && err.contains("not exact"), "{name}: want {line}: {err}");
            }
        }
    }
}

/// Use mode over two translation units: each TU's `static helper` gets its own entry count (3 and 5), and the
/// inline `twice` — defined in both modules, run through the one copy the linker kept — gets the total (8) in
/// both, not the zeros of the discarded copy.
#[test]
fn use_mode_keeps_static_functions_of_different_modules_apart() {
    let prof = run_in_mode("use2-train", &["use_tu_a.cpp", "use_tu_b.cpp"], "-O0", "edge", &[]);
    let dir = scratch("use2");
    for (src, helper) in [("use_tu_a.cpp", 3), ("use_tu_b.cpp", 5)] {
        let ll = dir.join(format!("{src}.ll"));
        run_ok(
            wrapper(true)
                .args(["-O0", "-S", "-emit-llvm"])
                .arg(format!("--pathprof-use={}", prof.display()))
                .arg(programs().join(src))
                .arg("-o")
                .arg(&ll),
        );
        let ir = std::fs::read_to_string(&ll).unwrap();
        let entry_of = |name: &str| -> Option<u64> {
            let def = ir.lines().find(|l| l.starts_with("define") && l.contains(&format!("@{name}(")))?;
            let md = def.split("!prof !").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?;
            let line = ir.lines().find(|l| l.starts_with(&format!("!{md} = ")))?;
            line.rsplit("i64 ").next()?.trim_end_matches('}').parse().ok()
        };
        assert_eq!(entry_of("_ZL6helperi"), Some(helper), "{src}: static helper");
        assert_eq!(entry_of("_Z5twicei"), Some(8), "{src}: inline twice");
    }
}

/// The runtime's path tables live outside the program's heap: a program that counts into run-time hash tables
/// (no dense array, no sparse region, no cache) prints the same heap usage and allocation distance as its
/// uninstrumented build. Before, the tables were `calloc`ed, which shifted the heap (zlib's `slide_hash` reads
/// memory it never initialised, and its counts differed between modes).
#[test]
fn path_tables_leave_the_heap_alone() {
    let src = programs().join("heap_untouched.c");
    let dir = scratch("heap-untouched");
    let plain = dir.join("plain");
    run_ok(Command::new("clang-19").arg("-O2").arg(&src).arg("-o").arg(&plain));
    let want = run_ok(&mut Command::new(&plain)).stdout;
    for mode in ["path", "context", "piecewise"] {
        for atomic in ["0", "1"] {
            let exe = dir.join(format!("{mode}-{atomic}"));
            run_ok(
                wrapper(false)
                    .arg("-O2")
                    .arg(&src)
                    .arg("-o")
                    .arg(&exe)
                    .env("PATHPROF_MODE", mode)
                    .env("PATHPROF_ATOMIC", atomic)
                    .env("PATHPROF_PATH_ARRAY_MAX", "1")
                    .env("PATHPROF_PATH_SPARSE_MAX", "1")
                    .env("PATHPROF_PATH_CACHE", "0"),
            );
            let prof = dir.join(format!("{mode}-{atomic}.pathprof"));
            let got = run_ok(Command::new(&exe).env("PATHPROF_FILE", &prof)).stdout;
            assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "{mode} atomic={atomic}");
            let show = show_json(&prof);
            assert!(show["functions"].as_array().unwrap().iter().all(|f| f["exact"] == true), "{mode}");
            assert_eq!(entry_counts(&show).get("mix"), Some(&Some(5000)), "{mode} atomic={atomic}");
        }
    }
}

/// `emptied`'s end is unreachable (undefined behaviour, proved by the optimiser), so it compiles to no code at
/// all and a call of it runs on into whatever follows: in the plain build the next object's first function
/// (clang emits a static function after the function that first refers to it, so `emptied` is the object's last).
const EMPTIED_MAIN: &str = r#"
extern int landed;
static void __attribute__((noinline)) emptied(void) { __builtin_unreachable(); }
static void (*volatile call_it)(void);
int main(void) {
  call_it = emptied;
  call_it();
  return landed ? 0 : 1;
}
"#;
const EMPTIED_NEXT: &str = r#"
int landed;
void landing(void) { landed = 1; }
"#;

#[test]
fn a_function_emptied_by_the_optimiser_runs_on_into_the_code_the_plain_build_has_there() {
    // Found on cmocka (its test of a null-pointer store): the call ran on into the module constructor the pass
    // had appended after the module's last function, which registered the module again and returned; the
    // list of modules became a cycle and the exit dump never ended. The pass's own functions now sit apart
    // (`.text.startup`, `.text.exit`, `.text.unlikely.pathprof`), so every function keeps its plain neighbour.
    let dir = scratch("emptied");
    let (a, b) = (dir.join("a.c"), dir.join("b.c"));
    std::fs::write(&a, EMPTIED_MAIN).unwrap();
    std::fs::write(&b, EMPTIED_NEXT).unwrap();
    let plain = dir.join("plain");
    run_ok(Command::new("clang-19").args(["-O2"]).arg(&a).arg(&b).arg("-o").arg(&plain));
    let expected = Command::new(&plain).status().unwrap().code();
    assert_eq!(expected, Some(0), "the plain build runs on into `landing`");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = dir.join(format!("prog-{mode}"));
        run_ok(wrapper(false).arg(format!("--pathprof-mode={mode}")).arg("-O2").arg(&a).arg(&b).arg("-o").arg(&exe));
        let profile = dir.join(format!("{mode}.pathprof"));
        let out = Command::new("timeout").arg("20").arg(&exe).env("PATHPROF_FILE", &profile).output().unwrap();
        assert_eq!(out.status.code(), expected, "{mode}: the program must end as the plain build does: {out:?}");
        let show = show_json(&profile);
        let entries = entry_counts(&show);
        assert_eq!(entries.get("landing"), Some(&Some(1)), "{mode}: {entries:?}");
        assert_eq!(entries.get("main"), Some(&Some(1)), "{mode}: {entries:?}");
        assert_not_profiled_for_no_defined_execution(&show["not_profiled"], mode);
    }
    // Trace and icache modes write a function's entry before its body: `emptied` must stay out (and empty), or
    // the call would run the entry code and then whatever codegen laid out after it (cmocka's test looped).
    for mode in ["trace", "icache"] {
        let exe = dir.join(format!("prog-{mode}"));
        run_ok(wrapper(false).arg(format!("--pathprof-mode={mode}")).arg("-O2").arg(&a).arg(&b).arg("-o").arg(&exe));
        let trace = dir.join(format!("{mode}.pathtrace"));
        let out = Command::new("timeout").arg("20").arg(&exe).env("PATHPROF_TRACE", &trace).output().unwrap();
        assert_eq!(out.status.code(), expected, "{mode}: the program must end as the plain build does: {out:?}");
        let summary =
            run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary", "--json"]).arg(&trace));
        let v: serde_json::Value = serde_json::from_slice(&summary.stdout).unwrap();
        assert_not_profiled_for_no_defined_execution(&v["not_traced"], mode);
    }
}

/// `emptied` is listed as left out, for the reason that no defined execution runs it.
fn assert_not_profiled_for_no_defined_execution(list: &serde_json::Value, mode: &str) {
    let left_out: Vec<(&str, &str)> = list
        .as_array()
        .unwrap_or_else(|| panic!("{mode}: no list of left-out functions: {list}"))
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["reason"].as_str().unwrap()))
        .collect();
    assert!(
        left_out.iter().any(|(n, why)| *n == "emptied" && why.contains("no defined execution")),
        "{mode}: {left_out:?}"
    );
}

/// Inline `syscall` assembly that does not declare the registers the instruction overwrites (syscall_asm.c, as
/// LZO 2.10's clock reader): in every mode at -O0 and -O2 the program prints what the plain build prints, and
/// the counting modes' profiles are exact with the hand-derived counts. Before the pass declared the clobbers,
/// context and piecewise mode kept the path number read at entry in `rcx` across the instruction: the program
/// crashed (LZO's test program counted code addresses as path numbers instead).
#[test]
fn inline_syscalls_keep_the_registers_the_instruction_overwrites() {
    let source = programs().join("syscall_asm.c");
    for opt in ["-O0", "-O2"] {
        for mode in ["edge", "block", "path", "context", "piecewise", "trace"] {
            let dir = scratch(&format!("syscall-asm-{mode}{opt}"));
            let (exe, prof, trace) = (dir.join("prog"), dir.join("out.pathprof"), dir.join("out.pathtrace"));
            run_ok(wrapper(false).arg(opt).arg(&source).arg("-o").arg(&exe).env("PATHPROF_MODE", mode));
            let ran = Command::new(&exe)
                .env("PATHPROF_FILE", &prof)
                .env("PATHPROF_TRACE", &trace)
                .output()
                .expect("run program");
            let what = format!("{mode} {opt}: {}", String::from_utf8_lossy(&ran.stderr));
            assert_eq!(ran.status.code(), Some(0), "{what}");
            assert_eq!(String::from_utf8_lossy(&ran.stdout), "0 100 1500\n", "{what}");
            if mode == "trace" {
                run_ok(Command::new(dist().join("bin/pathprof")).arg("trace").arg("--summary").arg(&trace));
                continue;
            }
            let show = show_json(&prof);
            assert_markers(&show, &source);
            for f in show["functions"].as_array().unwrap() {
                assert_eq!(f["exact"], true, "{what}: {} not exact: {}", f["name"], f["inexact_reasons"]);
            }
        }
    }
}
