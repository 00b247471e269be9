//! Block mode (`PATHPROF_MODE=block`, vertex profiling with edge counters, Ball & Larus 1994 §3.3) end to end:
//! the same block and entry counts as edge mode for every marker program at -O0 and -O2, fewer counters where
//! the graph forces it, edge counts never shown, `decode` refused, `export` identical to edge mode's.

use pathprof_test_suite::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Compiles `sources` in `mode` at `opt` (with `-g`), runs the program; returns the profile path.
fn run_in_mode(name: &str, sources: &[&str], opt: &str, mode: &str) -> InScratch {
    let dir = scratch(name);
    let cxx = sources.iter().any(|s| s.ends_with(".cpp"));
    let exe = dir.join("prog");
    let srcs: Vec<PathBuf> = sources.iter().map(|s| programs().join(s)).collect();
    run_ok(wrapper(cxx).arg(opt).arg("-g").args(&srcs).arg("-o").arg(&exe).env("PATHPROF_MODE", mode));
    let prof = dir.join("out.pathprof");
    let _ = Command::new(&exe).env("PATHPROF_FILE", &prof).output().expect("run program");
    assert!(prof.exists(), "{name}: no profile");
    dir.hold(prof)
}

/// Entry and block counts per function of the program's own sources, as "function entry" / "function bbN" ->
/// count. Library template code instantiated from system headers (libstdc++'s `std::string` internals in
/// cxx_mix.cpp) is left out: whether the program calls the local instance or libstdc++.so's copy depends on
/// -O2 inlining decisions, which the different instrumentation of the two modes sways (22 vs 15 out-of-line
/// `basic_string` calls), so those counts legitimately differ between the two binaries.
fn block_counts(show: &serde_json::Value) -> BTreeMap<String, Option<u64>> {
    let mut m = BTreeMap::new();
    for f in show["functions"].as_array().unwrap().iter().filter(|f| !f["file"].as_str().unwrap().starts_with("/usr/"))
    {
        let name = f["name"].as_str().unwrap();
        m.insert(format!("{name} entry"), f["entry_count"].as_u64());
        for b in f["blocks"].as_array().unwrap() {
            m.insert(format!("{name} bb{}", b["id"]), b["count"].as_u64());
        }
    }
    m
}

const PROGRAMS: &[(&str, &[&str])] = &[
    ("loops", &["loops.c"]),
    ("gotos", &["gotos.c"]),
    ("switch", &["switch.c"]),
    ("recursion", &["recursion.c"]),
    ("exit_deep", &["exit_deep.c"]),
    ("noexit_loop", &["noexit_loop.c"]),
    ("longjmp", &["longjmp.c"]),
    ("exception", &["exception.cpp"]),
    ("cxx_mix", &["cxx_mix.cpp"]),
    ("two_tu", &["two_tu_main.c", "two_tu_util.c"]),
    ("paths_mod", &["paths_mod.c"]),
    ("eighty_ifs", &["eighty_ifs.c"]),
    ("assume", &["assume.c"]),
    ("loop_paths", &["loop_paths.c"]),
    ("noreturn_site", &["noreturn_site.c"]),
    ("block_exit", &["block_exit.c"]),
];

#[test]
fn block_mode_counts_equal_edge_mode_counts() {
    for (name, srcs) in PROGRAMS {
        for opt in ["-O0", "-O2"] {
            let edge = show_json(&run_in_mode(&format!("{name}-bm-edge{opt}"), srcs, opt, "edge"));
            let block = show_json(&run_in_mode(&format!("{name}-bm-block{opt}"), srcs, opt, "block"));
            let (e, b) = (block_counts(&edge), block_counts(&block));
            assert_eq!(e.len(), b.len(), "{name} {opt}: different graphs");
            for (k, v) in &e {
                assert!(v.is_some(), "{name} {opt}: edge-mode count {k} not exact");
                assert_eq!(b.get(k), Some(v), "{name} {opt}: {k}: block mode differs from edge mode");
            }
            for f in block["functions"].as_array().unwrap() {
                assert_eq!(f["mode"], "block");
                assert_eq!(f["exact"], true, "{name} {opt}: {} not exact: {}", f["name"], f["inexact_reasons"]);
                // Edge counts are never shown in block mode, even those the counters happen to fix.
                for e in f["edges"].as_array().unwrap() {
                    assert!(e["count"].is_null(), "{name} {opt}: {}: block mode shows an edge count", f["name"]);
                }
            }
            // `expect:` markers (entries); `expect-out:` ones count normal departures, an edge count.
            for src in srcs.iter().map(|s| programs().join(s)) {
                let got = marker_counts(&block, &src);
                for (line, (measure, want)) in expectations(&src) {
                    if measure == Measure::Entered {
                        assert_eq!(got[&line], Some(want), "{name} {opt}: {}:{line}", src.display());
                    }
                }
            }
        }
    }
}

/// The `pathprof: stats:` fields of compiling `source` in `mode` at `opt`.
fn stats(source: &str, opt: &str, mode: &str) -> BTreeMap<String, String> {
    let dir = scratch(&format!("bm-stats-{mode}{opt}"));
    let out = run_ok(
        wrapper(false)
            .args([opt, "-c", "--pathprof-stats"])
            .arg(format!("--pathprof-mode={mode}"))
            .arg(programs().join(source))
            .arg("-o")
            .arg(dir.join("x.o")),
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let line = err.lines().find(|l| l.contains("pathprof: stats:")).expect("stats line");
    line.split_whitespace().filter_map(|w| w.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn block_mode_uses_fewer_counters_where_the_graph_forces_it() {
    for opt in ["-O0", "-O2"] {
        let edge = stats("block_exit.c", opt, "edge");
        let block = stats("block_exit.c", opt, "block");
        let num = |m: &BTreeMap<String, String>, k: &str| -> u64 { m[k].parse().unwrap() };
        assert_eq!(block["mode"], "block");
        // The edge-mode count block mode reports is edge mode's own.
        assert_eq!(num(&block, "edge_mode_counters"), num(&edge, "counters"), "{opt}");
        // One Return counter fewer in each of the three functions (see block_exit.c).
        assert!(num(&block, "counters") + 3 <= num(&edge, "counters"), "{opt}: block {block:?} edge {edge:?}");
        assert_eq!(num(&block, "skipped"), 0);
    }
}

#[test]
fn block_profiles_show_blocks_refuse_decode_and_export_like_edge_mode() {
    let pathprof = || Command::new(dist().join("bin/pathprof"));
    let block = run_in_mode("bm-cli-block", &["block_exit.c"], "-O0", "block");
    let edge = run_in_mode("bm-cli-edge", &["block_exit.c"], "-O0", "edge");

    let out = run_ok(pathprof().arg("show").arg(&block));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("edge counts and abnormal exits not available in block mode"), "{text}");
    assert!(text.contains("count n/a"), "{text}");
    assert!(!text.contains("INEXACT"), "{text}");

    let out = pathprof().arg("decode").arg(&block).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("block profile") && err.contains("no paths"), "{err}");

    // Sample-profile line counts are block counts: the export is the same as edge mode's.
    let export = |prof: &PathBuf, name: &str| -> String {
        let dir = scratch(name);
        let out_file = dir.join("out.prof");
        run_ok(pathprof().args(["export", "--format=sample-text"]).arg(prof).arg("-o").arg(&out_file));
        std::fs::read_to_string(&out_file).unwrap()
    };
    let (b, e) = (export(&block, "bm-export-block"), export(&edge, "bm-export-edge"));
    assert!(b.contains("main:") && b.contains("tally:"), "{b}");
    assert_eq!(b, e);
}
