//! End-to-end tests of the context and piecewise modes (Melski–Reps interprocedural path profiling): real
//! clang-19 + plugin + runtime + `pathprof decode/show`, checked against the paper's printed profiles, hand-derived
//! paths, and edge mode as a second method (block counts derived from interprocedural paths must equal what
//! edge mode measures for the same program).

use pathprof_test_suite::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Compiles `sources` with the wrapper in `mode` at `opt`, runs the program (with `env`), returns the profile.
fn run_in(name: &str, sources: &[&str], opt: &str, mode: &str, env: &[(&str, &str)]) -> InScratch {
    let dir = scratch(name);
    let cxx = sources.iter().any(|s| s.ends_with(".cpp"));
    let exe = dir.join("prog");
    let srcs: Vec<PathBuf> = sources.iter().map(|s| programs().join(s)).collect();
    let mut cc = wrapper(cxx);
    cc.arg(opt).arg("-g").args(&srcs).arg("-o").arg(&exe).env("PATHPROF_MODE", mode);
    for (k, v) in env {
        cc.env(k, v);
    }
    run_ok(&mut cc);
    let prof = dir.join("out.pathprof");
    let _ = std::fs::remove_file(&prof);
    let out = Command::new(&exe).env("PATHPROF_FILE", &prof).output().expect("run program");
    assert!(prof.exists(), "{name}: no profile; stderr: {}", String::from_utf8_lossy(&out.stderr));
    dir.hold(prof)
}

fn decode_json(profile: &std::path::Path) -> Value {
    let out = run_ok(Command::new(dist().join("bin/pathprof")).arg("decode").arg("--json").arg(profile));
    serde_json::from_slice(&out.stdout).expect("decode --json prints JSON")
}

fn id_counts(decoded: &Value) -> BTreeMap<u64, i64> {
    decoded["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_u64().unwrap(), p["count"].as_i64().unwrap()))
        .collect()
}

/// The paper's Figure 4 program at -O0: clang's CFG has the paper's successor order, so not only the decoded
/// paths but the very path numbers and counts of §3.3 (context) and Figs. 16/17 (piecewise) come out — with the
/// paper's paths, which run from before a loop into its first iteration (`PATHPROF_LOOP_RESETS=0`, so that a
/// change of the reset rule cannot move them).
#[test]
fn figure4_context_profile_is_the_papers() {
    let papers = [("PATHPROF_LOOP_RESETS", "0")];
    let d = decode_json(&run_in("mr-fig4-context", &["mr_fig4.c"], "-O0", "context", &papers));
    assert_eq!(d["mode"], "context");
    let want: BTreeMap<u64, i64> =
        [(16, 1), (18, 9), (24, 9), (25, 3), (27, 3), (28, 3), (29, 6), (30, 3), (32, 3), (33, 3), (34, 5), (35, 1)]
            .into_iter()
            .collect();
    assert_eq!(id_counts(&d), want);
    for f in d["functions"].as_array().unwrap() {
        assert_eq!(f["num_paths"], 36, "ψ_v1(1) = 36 unbalanced-left paths");
    }
    // Path 18 = EG v1 ~> v4 v5 v6 u1 u2 u3 u4 u5 u6 XG: context-prefix [main's entry], then main's loop body
    // calling power, ending at power's back edge.
    let p18 = d["paths"].as_array().unwrap().iter().find(|p| p["id"] == 18).unwrap();
    assert_eq!(p18["context_steps"], 1);
    assert_eq!(p18["start"], "loop_header");
    assert_eq!(p18["end"], "back_edge");
    let fns: Vec<&str> = p18["steps"].as_array().unwrap().iter().map(|s| s["function"].as_str().unwrap()).collect();
    assert_eq!(fns.first(), Some(&"main"));
    assert_eq!(fns.last(), Some(&"power"));
    assert!(p18["steps"].as_array().unwrap().iter().any(|s| s["via"] == "call"));
}

#[test]
fn figure4_piecewise_profile_is_the_papers() {
    let papers = [("PATHPROF_LOOP_RESETS", "0")];
    let d = decode_json(&run_in("mr-fig4-piecewise", &["mr_fig4.c"], "-O0", "piecewise", &papers));
    assert_eq!(d["mode"], "piecewise");
    let want: BTreeMap<u64, i64> =
        [(6, 1), (8, 9), (12, 3), (14, 5), (15, 1), (16, 15), (17, 3), (19, 6), (20, 6)].into_iter().collect();
    assert_eq!(id_counts(&d), want);
    // Path 17 (the paper's example): EG→u9→u3→u7→u8→v7→v8→v9→v10→u1→u2→u3→u4→u5→u6→XG — starts in power at its
    // loop header, returns to main (unbalanced) and calls power again.
    let p17 = d["paths"].as_array().unwrap().iter().find(|p| p["id"] == 17).unwrap();
    let vias: Vec<&str> = p17["steps"].as_array().unwrap().iter().map(|s| s["via"].as_str().unwrap()).collect();
    assert_eq!(p17["steps"][0]["function"], "power");
    assert!(vias.contains(&"return") && vias.contains(&"call"), "{vias:?}");
    assert_eq!(p17["context_steps"], 0);
}

/// Module-wide path numbers in a run-time hash table, updated inline through its cache (non-atomic builds):
/// forcing Figure 4's and the recursion program's modules out of the dense array must give exactly the paper's
/// and the dense profiles — with the default cache, a one-pair cache (every other update evicts) and none.
#[test]
fn hashed_interprocedural_storage_with_any_cache_matches_dense_storage() {
    for (program, mode) in [("mr_fig4.c", "context"), ("mr_fig4.c", "piecewise"), ("mr_recursion.c", "context")] {
        let dense = id_counts(&decode_json(&run_in(&format!("mr-dense-{mode}"), &[program], "-O0", mode, &[])));
        for cache in ["1024", "1", "0"] {
            let name = format!("mr-hashed-{mode}-{cache}");
            let env =
                [("PATHPROF_PATH_ARRAY_MAX", "1"), ("PATHPROF_PATH_SPARSE_MAX", "1"), ("PATHPROF_PATH_CACHE", cache)];
            let hashed = id_counts(&decode_json(&run_in(&name, &[program], "-O0", mode, &env)));
            assert_eq!(hashed, dense, "{program} {mode}, cache of {cache} pairs");
        }
    }
}

/// Storage units (ip_units.c: four runs of functions no followed call crosses, `pathprof_core::interproc::units`):
/// each unit counts with path numbers local to it. With the default arrays every unit is dense; with 64-slot
/// arrays and regions, branchy's unit (over a thousand paths) goes to a hash table of its own and the other three
/// stay dense. Both builds give the hand-derived counts, the same paths with the same module-wide numbers and
/// counts, and counts equal to edge mode's — at -O0 and -O2, including the fork child's re-entry in the third unit.
#[test]
fn storage_units_count_apart_with_local_numbers() {
    let src = programs().join("ip_units.c");
    let small = [("PATHPROF_PATH_ARRAY_MAX", "64"), ("PATHPROF_PATH_SPARSE_MAX", "64")];
    for opt in ["-O0", "-O2"] {
        let edge =
            folded_counts(&show_json(&run_in(&format!("ip-units-edge{opt}"), &["ip_units.c"], opt, "edge", &[])));
        for mode in ["context", "piecewise"] {
            let stats = |env: &[(&str, &str)]| {
                let dir = scratch(&format!("ip-units-stats-{mode}{opt}"));
                let mut cc = wrapper(false);
                cc.arg(opt).arg("-c").arg(&src).arg("-o").arg(dir.join("u.o")).env("PATHPROF_MODE", mode);
                cc.env("PATHPROF_STATS", "1").envs(env.iter().copied());
                let err = String::from_utf8_lossy(&run_ok(&mut cc).stderr).into_owned();
                let field = |k: &str| -> u64 {
                    let at = err.find(&format!(" {k}=")).unwrap_or_else(|| panic!("no {k}= in {err}"));
                    err[at + k.len() + 2..].split(' ').next().unwrap().trim().parse().unwrap()
                };
                ["units", "dense_units", "sparse_units", "hashed_units"].map(field)
            };
            assert_eq!(stats(&[]), [4, 4, 0, 0], "{mode} {opt}: default storage");
            assert_eq!(stats(&small), [4, 3, 0, 1], "{mode} {opt}: 64-slot arrays");
            let dense = run_in(&format!("ip-units-{mode}-dense{opt}"), &["ip_units.c"], opt, mode, &[]);
            let mixed = run_in(&format!("ip-units-{mode}-mixed{opt}"), &["ip_units.c"], opt, mode, &small);
            for prof in [&dense, &mixed] {
                let show = show_json(prof);
                assert_markers(&show, &src);
                let counts = folded_counts(&show);
                assert_eq!(counts, edge, "{mode} {opt}: {}", prof.display());
                for f in show["functions"].as_array().unwrap() {
                    assert_eq!(f["exact"], true, "{mode} {opt}: {} {}", f["name"], f["inexact_reasons"]);
                }
            }
            assert_eq!(id_counts(&decode_json(&dense)), id_counts(&decode_json(&mixed)), "{mode} {opt}");
        }
    }
}

/// Loops whose paths count in a hash table (hashed_loops.c, every unit forced out of the dense array) keep a
/// back edge's repeated paths in local slots and add them to the table on the loop's exits
/// (`pass/src/promote.rs`, `flush_local_counts`), in path, context and piecewise mode. At -O2 the derived counts
/// equal edge mode's and every path's count equals the dense build's (loops left by their test, a break, a
/// return from inside, an inner loop's exit, loops around a call); the loop with 1,100 exits is over the flush
/// budget and counts its matches where they happen, so fewer counts stay in registers than were planned.
#[test]
fn loop_paths_of_hashed_units_count_in_local_slots() {
    let src = "hashed_loops.c";
    let hashed = [("PATHPROF_PATH_ARRAY_MAX", "1"), ("PATHPROF_PATH_SPARSE_MAX", "1")];
    let edge = folded_counts(&show_json(&run_in("hashed-loops-edge", &[src], "-O2", "edge", &[])));
    let paths = |prof: &std::path::Path| -> BTreeMap<(String, u64), i64> {
        let d = decode_json(prof);
        d["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                ((p["function"].as_str().unwrap().to_string(), p["id"].as_u64().unwrap()), p["count"].as_i64().unwrap())
            })
            .collect()
    };
    for mode in ["path", "context", "piecewise"] {
        let dir = scratch(&format!("hashed-loops-stats-{mode}"));
        let mut cc = wrapper(false);
        cc.args(["-O2", "-c"]).arg(programs().join(src)).arg("-o").arg(dir.join("x.o"));
        cc.env("PATHPROF_MODE", mode).env("PATHPROF_STATS", "1").envs(hashed);
        let err = String::from_utf8_lossy(&run_ok(&mut cc).stderr).into_owned();
        let field = |k: &str| -> u64 {
            let at = err.find(&format!(" {k}=")).unwrap_or_else(|| panic!("no {k}= in {err}"));
            err[at + k.len() + 2..].split(' ').next().unwrap().trim().parse().unwrap()
        };
        let (locals, promoted) = (field("local_counts"), field("promoted_updates"));
        assert!(promoted >= 8 && locals > promoted, "{mode}: {locals} local counts, {promoted} in registers: {err}");

        let dense = run_in(&format!("hashed-loops-{mode}-dense"), &[src], "-O2", mode, &[]);
        let table = run_in(&format!("hashed-loops-{mode}-hashed"), &[src], "-O2", mode, &hashed);
        let show = show_json(&table);
        assert_eq!(folded_counts(&show), edge, "{mode}");
        for f in show["functions"].as_array().unwrap() {
            assert_eq!(f["exact"], true, "{mode}: {} {}", f["name"], f["inexact_reasons"]);
        }
        assert_eq!(paths(&table), paths(&dense), "{mode}: the hashed build's paths");
    }
}

/// `PATHPROF_IP_CUT_LEAVES=1` cuts every call site of a leaf with a loop (Figure 4's `power`, the loops of
/// loop_paths.c): the leaf becomes a root and its paths start at its entry. The derived counts stay edge mode's,
/// every function exact, at -O0 and -O2 in both modes; the planner reports the cut sites.
#[test]
fn cutting_the_sites_of_leaves_with_loops_keeps_the_counts() {
    let cut = [("PATHPROF_IP_CUT_LEAVES", "1")];
    for (name, src) in [("fig4", "mr_fig4.c"), ("loop_paths", "loop_paths.c"), ("inlined_loops", "inlined_loops.c")] {
        for opt in ["-O0", "-O2"] {
            let edge =
                folded_counts(&show_json(&run_in(&format!("ip-leaves-{name}-edge{opt}"), &[src], opt, "edge", &[])));
            for mode in ["context", "piecewise"] {
                let dir = scratch(&format!("ip-leaves-stats-{name}-{mode}{opt}"));
                let mut cc = wrapper(false);
                cc.arg(opt).arg("-c").arg(programs().join(src)).arg("-o").arg(dir.join("x.o"));
                cc.env("PATHPROF_MODE", mode).env("PATHPROF_STATS", "1").envs(cut);
                let err = String::from_utf8_lossy(&run_ok(&mut cc).stderr).into_owned();
                if name == "fig4" {
                    assert!(err.contains(" cut_leaves=2 "), "{mode} {opt}: main calls power twice: {err}");
                }
                let ip = show_json(&run_in(&format!("ip-leaves-{name}-{mode}{opt}"), &[src], opt, mode, &cut));
                assert_eq!(folded_counts(&ip), edge, "{name} {mode} {opt}");
                for f in ip["functions"].as_array().unwrap() {
                    assert_eq!(f["exact"], true, "{name} {mode} {opt}: {} {}", f["name"], f["inexact_reasons"]);
                }
            }
        }
    }
}

/// Hand-derived (see mr_recursion.c): context mode profiles fact(3) as three paths of count 1 — main's path
/// through fact(3) with the recursive call elided, fact(2) as a root with its call elided, and fact(1).
#[test]
fn recursion_is_profiled_as_separate_activations() {
    let d = decode_json(&run_in("mr-rec", &["mr_recursion.c"], "-O0", "context", &[]));
    let paths = d["paths"].as_array().unwrap();
    let touches = |p: &Value, f: &str| p["steps"].as_array().unwrap().iter().any(|s| s["function"] == f);
    let summary = |p: &Value| p["steps"].as_array().unwrap().iter().any(|s| s["via"] == "summary");
    let fact: Vec<&Value> = paths.iter().filter(|p| touches(p, "fact")).collect();
    // main's path (through fact(3), is_even(4), is_odd(3)), fact(2), fact(1), and two more in is_even.
    let starts_in = |f: &str| fact.iter().filter(|p| p["steps"][0]["function"] == f).count();
    assert_eq!(starts_in("fact"), 2, "fact(2) and fact(1) are roots of their own");
    assert_eq!(starts_in("main"), 1);
    for p in &fact {
        assert_eq!(p["count"], 1);
    }
    let fact_roots: Vec<&&Value> = fact.iter().filter(|p| p["steps"][0]["function"] == "fact").collect();
    assert_eq!(fact_roots.iter().filter(|p| summary(p)).count(), 1, "fact(2) elides its recursive call");
    // Mutual recursion: is_even(4) is followed from main into is_odd(3); is_odd's call back to is_even is the
    // recursive site, so is_even(2) and is_even(0) are roots: is_even(2)→is_odd(1) elides again.
    let even_roots = paths.iter().filter(|p| p["steps"][0]["function"] == "is_even").count();
    assert_eq!(even_roots, 2);
    let total: i64 = paths.iter().map(|p| p["count"].as_i64().unwrap()).sum();
    assert_eq!(total, 5, "main, fact(2), fact(1), is_even(2), is_even(0)");
}

/// Per function: entry count and the count of the first block of each straight-line chain (a block that is
/// its layout predecessor's only successor, and has no other predecessor, continues its chain). The blocks the
/// interprocedural pass splits off around call sites continue their chains, so both modes' chains line up.
fn folded_counts(show: &Value) -> BTreeMap<String, Option<u64>> {
    let mut m = BTreeMap::new();
    for f in show["functions"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        m.insert(format!("{name} entry"), f["entry_count"].as_u64());
        let blocks = f["blocks"].as_array().unwrap();
        let edges = f["edges"].as_array().unwrap();
        let (mut outs, mut ins) = (vec![Vec::new(); blocks.len() + 1], vec![0usize; blocks.len() + 1]);
        for e in edges {
            let (from, to) = (e["from"].as_u64().unwrap() as usize, e["to"].as_u64().unwrap() as usize);
            outs[from].push((to, e["kind"].as_str().unwrap().to_string()));
            ins[to] += 1;
        }
        // Block i+1 continues block i's chain when it is i's only successor and i its only predecessor.
        let continues = |i: usize| outs[i].len() == 1 && outs[i][0] == (i + 1, "branch".to_string()) && ins[i + 1] == 1;
        let mut chain = 0;
        for (i, b) in blocks.iter().enumerate() {
            if i == 0 || !continues(i - 1) {
                m.insert(format!("{name} chain{chain}"), b["count"].as_u64());
                chain += 1;
            }
        }
    }
    m
}

/// Second method: for every test program, at -O0 and -O2, in both modes, the block and entry counts derived
/// from the interprocedural paths equal edge mode's counts for the same program, and every function is exact
/// (flow is conserved in every function, which fails if a single path were attributed wrongly).
#[test]
fn interprocedural_counts_equal_edge_mode_counts() {
    let interprocedural: &[(&str, &[&str])] = &[
        ("fig4", &["mr_fig4.c"]),
        ("mr_recursion", &["mr_recursion.c"]),
        ("mr_fnptr", &["mr_fnptr.c"]),
        ("mr_exit_in_loop", &["mr_exit_in_loop.c"]),
        ("two_tu", &["two_tu_main.c", "two_tu_util.c"]),
        ("fnptr_arg", &["fnptr_arg.c"]),
        ("noreturn_site", &["noreturn_site.c"]),
        ("builtin_setjmp", &["builtin_setjmp.c"]),
        ("demo", &["../../examples/demo.c"]),
        // A 40-case dispatch join: with `dispatch` and `tree`, its edge values go on spanning-tree chords.
        ("mr_dispatch", &["mr_dispatch.c"]),
        // 2^80 paths in `f`: more than its own-path bound, so it is cut at vertices (see the test below).
        ("eighty_ifs", &["eighty_ifs.c"]),
        // 2^64 paths in `checks`, every block of which holds a call: cut after the calls (see the test below).
        ("call_diamonds", &["call_diamonds.c"]),
        // Piecewise numUnbalRLPaths of a leaf above u128: the leaf's call sites are cut (see the test below).
        ("unbalanced_overflow", &["unbalanced_overflow.c"]),
        // Functions that call only themselves: their returns' code runs before the recursive calls.
        ("self_recursion", &["self_recursion.c"]),
        // Mutual `musttail` recursion entered through a call: its functions are entered as roots only.
        ("mr_musttail", &["mr_musttail.c"]),
        // Tail-calling interpreter handlers and 1,000-deep mutual tail recursion (the trace test's program).
        ("trace_musttail", &["trace_musttail.c"]),
    ];
    let programs = interprocedural.iter().map(|&(name, srcs)| (name, srcs.to_vec()));
    for (name, srcs) in programs.chain(single_source_programs(SHAPE_PROGRAMS)) {
        let srcs = &srcs[..];
        for opt in ["-O0", "-O2"] {
            let edge = show_json(&run_in(&format!("ip-{name}-edge{opt}"), srcs, opt, "edge", &[]));
            // These programs have nothing the pass must leave out (a computed goto with a label taken twice
            // once left threaded_interp's `run` out, silently for this comparison).
            assert_eq!(
                edge["not_profiled"].as_array().map(Vec::len),
                Some(0),
                "{name} {opt} edge: {}",
                edge["not_profiled"]
            );
            let e = folded_counts(&edge);
            // C++ at -O2: libstdc++'s `extern template` members are available_externally bodies that call
            // this module's inline functions; whether the inliner takes them (and so whether those inline
            // functions run at all) depends on the code size the instrumentation adds. Both profiles are exact
            // for their own binary, but they measure different programs; only exactness is compared there.
            let same_program = opt == "-O0" || srcs.iter().all(|s| s.ends_with(".c"));
            // Every placement of the edge values (pass/src/interproc_place.rs): on spanning-tree chords in
            // dispatch functions (the default) or in every function (block potentials), and as the numbering
            // gives them — which is what `dispatch` emits outside dispatch functions, so `values` runs only
            // where the program has one.
            let placements: &[&str] =
                if name == "mr_dispatch" { &["dispatch", "tree", "values"] } else { &["dispatch", "tree"] };
            let runs = ["context", "piecewise"].into_iter().flat_map(|m| placements.iter().map(move |&p| (m, p)));
            for (mode, placement) in runs {
                let env = [("PATHPROF_IP_PLACEMENT", placement)];
                let ip = show_json(&run_in(&format!("ip-{name}-{mode}-{placement}{opt}"), srcs, opt, mode, &env));
                let p = folded_counts(&ip);
                assert_eq!(
                    ip["not_profiled"].as_array().map(Vec::len),
                    Some(0),
                    "{name} {opt} {mode} ({placement}): {}",
                    ip["not_profiled"]
                );
                let mut compared = 0;
                for (k, v) in p.iter().filter(|_| same_program) {
                    if let Some(want) = e.get(k) {
                        assert_eq!(v, want, "{name} {opt} {mode} ({placement}): {k}");
                        compared += 1;
                    }
                }
                assert!(compared > 0 || !same_program, "{name} {opt} {mode} ({placement}): nothing compared");
                for f in ip["functions"].as_array().unwrap() {
                    assert_eq!(
                        f["exact"], true,
                        "{name} {opt} {mode} ({placement}): {} not exact: {}",
                        f["name"], f["inexact_reasons"]
                    );
                }
            }
        }
    }
}

/// A function with more acyclic paths of its own than the interprocedural numbering allows (the bound is 2^55) is
/// cut at vertices like path mode cuts it, not left out: eighty_ifs.c's `f` (2^80 paths, 1000 calls from main's
/// loop) and call_diamonds.c's `checks` (2^64 paths, 10 calls; as in GMP's t-fits.c, every block of the unsplit
/// function holds a call, site calls and an indirect call that may not return, so only the blocks the call
/// splitting leaves behind the calls can be cut). Each is profiled, exact, with its entry count by hand, no
/// function is reported as not profiled, and decode reports paths that start or end at a cut. (Their counts equal
/// edge mode's: `interprocedural_counts_equal_edge_mode_counts`.)
#[test]
fn a_function_with_too_many_paths_of_its_own_is_cut_not_left_out() {
    for (program, function, entries) in [("eighty_ifs.c", "f", 1000), ("call_diamonds.c", "checks", 10)] {
        for mode in ["context", "piecewise"] {
            let what = format!("{program} {mode}");
            let prof = run_in(&format!("ip-cut-{function}-{mode}"), &[program], "-O2", mode, &[]);
            let show = show_json(&prof);
            assert_eq!(show["not_profiled"].as_array().map(Vec::len), Some(0), "{what}: {}", show["not_profiled"]);
            let f = show["functions"].as_array().unwrap().iter().find(|f| f["name"] == function).expect("profiled");
            assert_eq!(f["exact"], true, "{what}: {}", f["inexact_reasons"]);
            assert_eq!(f["entry_count"], entries, "{what}");
            let d = decode_json(&prof);
            // (start, end, home function) of every path: the function's paths end at cuts and start after them
            // (their active part then runs on into main, whose loop has the only back edge).
            let marks: Vec<(&str, &str, &str)> = d["paths"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p["start"].as_str().unwrap(), p["end"].as_str().unwrap(), p["function"].as_str().unwrap()))
                .collect();
            let n = marks.len();
            assert!(marks.iter().any(|&(_, end, _)| end == "cut"), "{what}: none of {n} paths ends at a cut");
            assert!(
                marks.iter().any(|&(start, _, f)| start == "after_cut" && f == function),
                "{what}: no path starts after a cut"
            );
            assert!(
                !marks.iter().any(|&(start, _, f)| start == "loop_header" && f == function),
                "{what}: {function} has no loop"
            );
        }
    }
}

/// A leaf whose piecewise numUnbalRLPaths (what its 127 call sites' return sites continue with, in a function
/// four roots call) overflows u128 while every ψ fits: the budget policy cuts the leaf's call sites and keeps
/// `work`'s four, instead of refusing the module. Exact, nothing left out, entries by hand; context mode alike.
/// (Counts equal edge mode's: `interprocedural_counts_equal_edge_mode_counts`.)
#[test]
fn an_overflow_in_what_a_leafs_callers_continue_with_cuts_the_leafs_sites() {
    for mode in ["piecewise", "context"] {
        let prof = run_in(&format!("ip-unbalanced-{mode}"), &["unbalanced_overflow.c"], "-O2", mode, &[]);
        let show = show_json(&prof);
        assert_eq!(show["not_profiled"].as_array().map(Vec::len), Some(0), "{mode}: {}", show["not_profiled"]);
        let entries = |name: &str| {
            let f = show["functions"].as_array().unwrap().iter().find(|f| f["name"] == name);
            let f = f.unwrap_or_else(|| panic!("{mode}: {name} is profiled"));
            assert_eq!(f["exact"], true, "{mode} {name}: {}", f["inexact_reasons"]);
            f["entry_count"].as_u64().unwrap()
        };
        assert_eq!(entries("work"), 4, "{mode}");
        assert_eq!(entries("leaf"), 4 * 127, "{mode}");
        assert_eq!(entries("first") + entries("second") + entries("third") + entries("fourth"), 4, "{mode}");
    }
}

/// The IR of each function defined in `ll`, by name.
fn function_bodies(ll: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(String, String)> = None;
    for line in ll.lines() {
        if let Some(rest) = line.strip_prefix("define ") {
            let name = rest.split('@').nth(1).and_then(|r| r.split('(').next()).unwrap_or("").to_string();
            cur = Some((name, String::new()));
        } else if line == "}" {
            if let Some((n, body)) = cur.take() {
                out.insert(n, body);
            }
        } else if let Some((_, body)) = cur.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// A recursive function with a loop and many ρ(NVC) products (the matcher, shaped like Lua's `match`) reads
/// NVC through volatile loads at its edges, so LLVM cannot hoist every product to its entry; functions that
/// do not call themselves (main's loops) or have no loop (`class_matches`, which calls itself) keep NVC in a
/// register. At -O0, so that no function is inlined into another. (The counts are checked against edge mode
/// above.)
#[test]
fn recursive_matcher_reads_nvc_at_its_edges() {
    let dir = scratch("ip-opaque-nvc");
    let ll = dir.join("glob_match.ll");
    run_ok(
        wrapper(false)
            .args(["-O0", "-S", "-emit-llvm"])
            .arg(programs().join("glob_match.c"))
            .arg("-o")
            .arg(&ll)
            .env("PATHPROF_MODE", "context"),
    );
    let bodies = function_bodies(&std::fs::read_to_string(&ll).unwrap());
    // Volatile loads from a stack slot (counter updates outside loops are volatile too, but on globals).
    let volatile_loads = |f: &str| {
        bodies.get(f).map(|b| {
            let slots: Vec<&str> =
                b.lines().filter(|l| l.contains(" = alloca i64")).filter_map(|l| l.split_whitespace().next()).collect();
            b.lines().filter(|l| slots.iter().any(|s| l.contains(&format!("load volatile i64, ptr {s},")))).count()
        })
    };
    assert!(volatile_loads("match").is_some_and(|n| n > 8), "{:?}", volatile_loads("match"));
    assert_eq!(volatile_loads("main"), Some(0));
    assert_eq!(volatile_loads("class_matches"), Some(0));
}

/// Threads: the handoff state is thread-local, so with atomic counters four threads give exact counts.
#[test]
fn threads_with_atomic_counters_are_exact() {
    for mode in ["context", "piecewise"] {
        let edge = show_json(&run_in(
            &format!("ip-threads-edge-{mode}"),
            &["threads.c"],
            "-O2",
            "edge",
            &[("PATHPROF_ATOMIC", "1")],
        ));
        let ip =
            show_json(&run_in(&format!("ip-threads-{mode}"), &["threads.c"], "-O2", mode, &[("PATHPROF_ATOMIC", "1")]));
        let (e, p) = (folded_counts(&edge), folded_counts(&ip));
        for (k, v) in &p {
            assert_eq!(Some(v), e.get(k), "{mode}: {k}");
        }
        for f in ip["functions"].as_array().unwrap() {
            assert_eq!(f["exact"], true, "{mode}: {} not exact: {}", f["name"], f["inexact_reasons"]);
        }
    }
}

/// The source line of the first line of `file` containing `text`.
fn line_of(file: &str, text: &str) -> u64 {
    let src = std::fs::read_to_string(programs().join(file)).expect("read source");
    src.lines().position(|l| l.contains(text)).expect("marker text") as u64 + 1
}

/// Sum of the counts of paths whose active part runs a block of `function` with source line `line`.
fn count_through(d: &Value, function: &str, line: u64) -> i64 {
    d["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let from = p["context_steps"].as_u64().unwrap() as usize;
            p["steps"].as_array().unwrap()[from..]
                .iter()
                .any(|s| s["function"] == function && s["lines"].as_array().unwrap().iter().any(|l| l == line))
        })
        .map(|p| p["count"].as_i64().unwrap())
        .sum()
}

/// Two translation units: per TU, `square` and `clamp` (external functions of another module) are entered as
/// roots of their own paths; with `--pathprof-lto` the whole program is one module at the link and main's loop
/// paths run through both callees. Counts hand-derived in two_tu_util.c (clamp: hi 37, x 63, lo 0).
#[test]
fn whole_program_lto_paths_cross_translation_units() {
    let util = "two_tu_util.c";
    let (hi, x) = (line_of(util, "return hi;"), line_of(util, "return x;"));
    for opt in ["-O0", "-O1"] {
        let dir = scratch(&format!("ip-lto{opt}"));
        let mut objs = Vec::new();
        for src in ["two_tu_main.c", util] {
            let obj = dir.join(format!("{src}.o"));
            run_ok(
                wrapper(false)
                    .args(["--pathprof-mode=context", "--pathprof-lto", opt, "-c"])
                    .arg(programs().join(src))
                    .arg("-o")
                    .arg(&obj),
            );
            objs.push(obj);
        }
        let exe = dir.join("prog");
        let link = run_ok(
            wrapper(false)
                .args(["--pathprof-mode=context", "--pathprof-lto", "--pathprof-stats", opt])
                .args(&objs)
                .arg("-o")
                .arg(&exe),
        );
        let stats = String::from_utf8_lossy(&link.stderr);
        assert!(stats.contains("functions=3") && stats.contains("interprocedural=2"), "{opt}: {stats}");
        let prof = dir.join("out.pathprof");
        let _ = Command::new(&exe).env("PATHPROF_FILE", &prof).output().expect("run");
        let d = decode_json(&prof);
        for p in d["paths"].as_array().unwrap() {
            assert_eq!(p["steps"][0]["function"], "main", "{opt}: after LTO only main is a root");
        }
        if opt == "-O0" {
            assert_eq!(count_through(&d, "clamp", hi), 37);
            assert_eq!(count_through(&d, "clamp", x), 63);
            let total: i64 = d["paths"].as_array().unwrap().iter().map(|p| p["count"].as_i64().unwrap()).sum();
            assert_eq!(total, 101, "100 loop iterations (99 restart at the header) and the exit path");
        }
        // At -O1 the link sees the pre-link pipeline's optimised IR (rotated loop, clamp as selects): the
        // counts must still be exact and complete.
        let show = show_json(&prof);
        for f in show["functions"].as_array().unwrap() {
            assert_eq!(f["exact"], true, "{opt}: {}", f["inexact_reasons"]);
        }
        let entries: BTreeMap<&str, u64> = show["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["name"].as_str().unwrap(), f["entry_count"].as_u64().unwrap_or(0)))
            .collect();
        assert_eq!(entries.get("main"), Some(&1), "{opt}: {entries:?}");
        assert_eq!(entries.get("clamp"), Some(&100), "{opt}: {entries:?}");
    }
    // Per TU: the callees are roots; main's paths elide nothing but do not enter them.
    let d = decode_json(&run_in("ip-two-tu", &["two_tu_main.c", util], "-O0", "context", &[]));
    let starts: std::collections::BTreeSet<&str> =
        d["paths"].as_array().unwrap().iter().map(|p| p["steps"][0]["function"].as_str().unwrap()).collect();
    assert!(starts.contains("clamp") && starts.contains("square") && starts.contains("main"), "{starts:?}");
    assert_eq!(count_through(&d, "clamp", x), 63);
}

/// A translation unit with no function (only data) is a module with an empty program: nothing to do, no error.
#[test]
fn a_module_without_functions_compiles() {
    let dir = scratch("ip-nofn");
    let src = dir.join("data.c");
    std::fs::write(&src, "const int table[4] = {1, 2, 3, 4};\n").unwrap();
    for mode in ["context", "piecewise"] {
        run_ok(
            wrapper(false)
                .arg(format!("--pathprof-mode={mode}"))
                .args(["-O2", "-c"])
                .arg(&src)
                .arg("-o")
                .arg(dir.join("data.o")),
        );
    }
}

/// An inline function defined in two translation units: the linker keeps one module's copy, so calls from the
/// other module run a copy that does not read their module's handoff state. Such calls must not be
/// interprocedural call sites (before the fix, the other module's copy was credited with 45 phantom runs of its
/// first path, every function still "exact"). Counts derived by hand in odr_inline.h; both copies summed per
/// function equal edge mode's, at -O0 and -O2.
#[test]
fn inline_function_copies_of_other_modules_are_not_call_sites() {
    let srcs = ["odr_main.cpp", "odr_util.cpp"];
    for opt in ["-O0", "-O2"] {
        let summed = |show: &Value| -> BTreeMap<String, u64> {
            let mut m = BTreeMap::new();
            for f in show["functions"].as_array().unwrap() {
                assert_eq!(f["exact"], true, "{opt}: {} not exact: {}", f["name"], f["inexact_reasons"]);
                let name = f["name"].as_str().unwrap().to_string();
                for (i, b) in f["blocks"].as_array().unwrap().iter().enumerate() {
                    *m.entry(format!("{name} line{}#{i}", b["lines"])).or_insert(0) += b["count"].as_u64().unwrap();
                }
            }
            m
        };
        let edge = show_json(&run_in(&format!("ip-odr-edge{opt}"), &srcs, opt, "edge", &[]));
        for src in ["odr_inline.h", "odr_main.cpp", "odr_util.cpp"] {
            assert_markers(&edge, &programs().join(src));
        }
        for mode in ["context", "piecewise"] {
            let ip = show_json(&run_in(&format!("ip-odr-{mode}{opt}"), &srcs, opt, mode, &[]));
            for src in ["odr_inline.h", "odr_main.cpp", "odr_util.cpp"] {
                assert_markers(&ip, &programs().join(src));
            }
            // Each copy of `twice` is counted where it ran: summed over the modules, its blocks equal edge mode's.
            let (e, p) = (summed(&edge), summed(&ip));
            for (k, v) in p.iter().filter(|(k, _)| k.starts_with("_Z5twicei")) {
                assert_eq!(Some(v), e.get(k), "{opt} {mode}: {k}");
            }
        }
    }
}

/// mr_musttail.c: a chain of `musttail` calls entered through main's call returns to main from another
/// activation than the one main entered, after other activations used the handoff slot. Its functions are
/// entered as roots only, so every count is the hand-derived one (before: after_chain 24 or 26 of 200, exact),
/// per translation unit at -O0 and -O2 and whole program.
#[test]
fn a_musttail_chain_entered_through_a_call_counts_exactly() {
    let want = [("main", 1), ("tail_a", 940), ("tail_b", 834), ("step", 740), ("after_chain", 200)];
    let check = |show: &serde_json::Value, what: &str| {
        let entries = entry_counts(show);
        for (f, n) in want {
            assert_eq!(entries.get(f), Some(&Some(n)), "{what}: {f}: {entries:?}");
        }
        for f in show["functions"].as_array().unwrap() {
            assert_eq!(f["exact"], true, "{what}: {} not exact: {}", f["name"], f["inexact_reasons"]);
        }
    };
    for mode in ["context", "piecewise"] {
        for opt in ["-O0", "-O2"] {
            let show = show_json(&run_in(&format!("ip-musttail-{mode}{opt}"), &["mr_musttail.c"], opt, mode, &[]));
            check(&show, &format!("{mode} {opt}"));
        }
        let src = programs().join("mr_musttail.c");
        let show = whole_program_o2(&format!("ip-musttail-lto-{mode}"), false, mode, std::slice::from_ref(&src));
        check(&show, &format!("{mode} whole program"));
    }
}

/// Whole program at -O2: f's landing pad, its call of a function that may not return and the `resume` are one
/// block. Interprocedural modes end a path at a `resume`, so that block could be left abnormally in two ways;
/// it keeps one termination edge, counted once per arrival (before, the reader refused the whole profile: "has
/// more than one termination edge"). Counts hand-derived in the source; edge mode agrees.
#[test]
fn a_cleanup_block_that_calls_and_resumes_ends_paths_once() {
    let src = programs().join("cleanup_resume.cpp");
    for mode in ["edge", "context", "piecewise"] {
        let show = whole_program_o2(&format!("ip-cleanup-resume-{mode}"), true, mode, std::slice::from_ref(&src));
        let entries = entry_counts(&show);
        assert_eq!(entries.get("_Z1fi"), Some(&Some(10)), "{mode}: {entries:?}");
        assert_markers(&show, &src);
    }
}

/// Whole program at -O2: f's landing pad calls fputc, whose stream's write function exits the second time an
/// exception unwinds, and then resumes — one block. Each arrival there ends the path, by the call or by the
/// `resume`, and is counted before the call: before, it was counted at the `resume`, so the arrival whose call
/// exited was lost and the reader, netting arrivals, put that path's end at the `throw` (the cleanup counted
/// once, every function "exact"); and the path key the fputc's fork re-entry check records was computed after
/// it (invalid IR; with the spanning-tree placements no later pass repaired it). Hand-derived: f's cleanup runs
/// for i = 0 and i = 3, every mode and placement; edge mode agrees.
#[test]
fn a_cleanup_call_that_does_not_return_still_counts_the_cleanup() {
    let src = programs().join("cleanup_exit.cpp");
    let runs = [("edge", "values")]
        .into_iter()
        .chain(["context", "piecewise"].into_iter().flat_map(|m| ["values", "dispatch", "tree"].map(|p| (m, p))));
    for (mode, placement) in runs {
        let name = format!("ip-cleanup-exit-{mode}-{placement}");
        let env = [("PATHPROF_IP_PLACEMENT", placement)];
        let show = whole_program_o2_with(&name, true, mode, std::slice::from_ref(&src), &env);
        assert_markers(&show, &src);
        let f = show["functions"].as_array().unwrap().iter().find(|f| f["name"] == "_Z1fi").expect("f");
        assert_eq!(f["entry_count"], 4, "{mode} {placement}");
        // The landing pad: where the throw's block goes (its invoke's unwind edge; the normal one is dead).
        let line = line_of("cleanup_exit.cpp", "throw x;");
        let block_with = |l: u64| {
            f["blocks"].as_array().unwrap().iter().find(|b| b["lines"].as_array().unwrap().contains(&l.into()))
        };
        let throw = block_with(line).expect("the throw's block")["id"].clone();
        let pads: Vec<&Value> = f["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["from"] == throw && e["kind"] == "branch")
            .map(|e| &f["blocks"][e["to"].as_u64().unwrap() as usize])
            .filter(|b| b["count"].as_u64() != Some(0))
            .collect();
        assert_eq!(pads.len(), 1, "{mode} {placement}: {}", f["edges"]);
        assert_eq!(pads[0]["count"], 2, "{mode} {placement}: the cleanup ran twice");
    }
}

/// A static function whose address is passed as an argument to another program function's call site, and that
/// is also called directly: it may be entered through the pointer, so it checks at entry. Before, such a use
/// counted as "only entered through call sites": the 30 calls through the pointer read a stale handoff, and the
/// profile said add ran once, every function "exact". Counts hand-derived in fnptr_arg.c.
#[test]
fn a_function_passed_as_an_argument_to_a_call_site_is_entered_from_outside() {
    let src = programs().join("fnptr_arg.c");
    for opt in ["-O0", "-O2"] {
        for mode in ["context", "piecewise"] {
            let show = show_json(&run_in(&format!("ip-fnptr-arg-{mode}{opt}"), &["fnptr_arg.c"], opt, mode, &[]));
            assert_markers(&show, &src);
            assert_eq!(entry_counts(&show).get("add"), Some(&Some(31)), "{mode} {opt}");
        }
    }
}

/// Whole program at -O2: the pre-link pipeline marks functions with memory promises (argument memory only,
/// nosync) that instrumentation breaks; the pass withdraws them from instrumented functions and their calls.
/// Before, the optimiser moved the handoff around the calls: path numbers out of range, counts lost (xz and
/// zlib under --pathprof-lto). Counts hand-derived in lto_tree.c, in every mode.
#[test]
fn memory_promises_of_instrumented_functions_are_withdrawn() {
    let srcs = [programs().join("lto_tree.c"), programs().join("lto_tree_free.c")];
    for mode in ["edge", "path", "context", "piecewise"] {
        let show = whole_program_o2(&format!("ip-lto-tree-{mode}"), false, mode, &srcs);
        let entries = entry_counts(&show);
        for (f, n) in [("tree_node_end", 600), ("free_stream", 75), ("lto_tree_free", 525), ("build", 600)] {
            assert_eq!(entries.get(f), Some(&Some(n)), "{mode}: {f} {entries:?}");
        }
        for src in &srcs {
            assert_markers(&show, src);
        }
    }
}

/// Blocks no defined execution reaches get no code (assume.c); a call that never returns, split from its
/// `unreachable` as a call site, keeps that block as its return site (jsoncpp under --pathprof-lto: "call block
/// must have exactly one branch out-edge"). Whole program at -O2 in every mode, hand-derived counts.
#[test]
fn promises_and_calls_that_never_return_whole_program() {
    for mode in ["edge", "path", "context", "piecewise"] {
        // The optimiser turns classify's switch into arithmetic, so its lines are gone: entry counts instead.
        let show = whole_program_o2(&format!("ip-lto-assume-{mode}"), false, mode, &[programs().join("assume.c")]);
        let entries = entry_counts(&show);
        for (f, n) in [("classify", 40), ("insert", 10)] {
            assert_eq!(entries.get(f), Some(&Some(n)), "{mode}: {f} {entries:?}");
        }
        // The loop folds to its sum at -O2: finish runs once, and ends the program.
        let show = whole_program_o2(
            &format!("ip-lto-noreturn-site-{mode}"),
            false,
            mode,
            &[programs().join("noreturn_site.c")],
        );
        let entries = entry_counts(&show);
        for f in ["main", "finish"] {
            assert_eq!(entries.get(f), Some(&Some(1)), "{mode}: {f} {entries:?}");
        }
    }
}

/// Builds `srcs` as one whole program (`--pathprof-lto -O2 -g`) in `mode`, runs it (exit status 0: behaviour
/// unchanged) and returns `show --json` of its profile, every function asserted exact.
fn whole_program_o2(name: &str, cxx: bool, mode: &str, srcs: &[PathBuf]) -> Value {
    whole_program_o2_with(name, cxx, mode, srcs, &[])
}

/// [`whole_program_o2`] with `env` for the compiles and the link.
fn whole_program_o2_with(name: &str, cxx: bool, mode: &str, srcs: &[PathBuf], env: &[(&str, &str)]) -> Value {
    let dir = scratch(name);
    let exe = dir.join("prog");
    let mut cc = wrapper(cxx);
    cc.arg(format!("--pathprof-mode={mode}")).args(["--pathprof-lto", "-O2", "-g"]).args(srcs).arg("-o").arg(&exe);
    for (k, v) in env {
        cc.env(k, v);
    }
    run_ok(&mut cc);
    let prof = dir.join("out.pathprof");
    let _ = std::fs::remove_file(&prof);
    let out = Command::new(&exe).env("PATHPROF_FILE", &prof).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{name}: the program's behaviour is unchanged");
    let show = show_json(&prof);
    for f in show["functions"].as_array().unwrap() {
        assert_eq!(f["exact"], true, "{name}: {} {}", f["name"], f["inexact_reasons"]);
    }
    show
}

/// A signal handler that calls the functions it interrupted (signal_handover.c): the runtime's trampoline sets
/// each module's caller/callee hand-over aside while the handler runs (`ModuleDesc::ip_swap`). Before, main's
/// loop counted short by 1–6 in 20 M in most runs, every function still "exact". Counts hand-derived: main's
/// loop body 20 M times; work() 20 M times plus 100 per handler run, however many signals arrived.
#[test]
fn a_signal_handler_cannot_overwrite_the_hand_over() {
    let src = programs().join("signal_handover.c");
    let atomic = [("PATHPROF_ATOMIC", "1")];
    for mode in ["context", "piecewise"] {
        for round in 0..3 {
            let name = format!("ip-signal-handover-{mode}-{round}");
            // Per translation unit twice, then the whole program (one module, hand-over and all).
            let show = if round < 2 {
                show_json(&run_in(&name, &["signal_handover.c"], "-O2", mode, &atomic))
            } else {
                whole_program_o2_with(&name, false, mode, std::slice::from_ref(&src), &atomic)
            };
            assert_markers(&show, &src);
            let entries = entry_counts(&show);
            let handler_runs = entries["handler"].expect("handler exact");
            assert!(handler_runs > 0, "{mode}: no signal arrived");
            assert_eq!(entries["work"], Some(20_000_000 + 100 * handler_runs), "{mode}: {entries:?}");
            for f in show["functions"].as_array().unwrap() {
                assert_eq!(f["exact"], Value::Bool(true), "{mode}: {} {}", f["name"], f["inexact_reasons"]);
            }
        }
    }
}
