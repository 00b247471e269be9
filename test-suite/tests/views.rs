//! `pathprof top`, `diff` and `coverage` end to end on spectra.c, whose path, line and branch counts are derived
//! by hand in its header comment: classify(i) for i in [0, 12 / argc), two if-statements in classify, a loop
//! and an if in main. Run A has no argument (n = 12), run B one (n = 6). Compiled at -O0, where the graph
//! follows the source.

use pathprof_format::meta::PathStorage;
use pathprof_format::profile;
use pathprof_test_suite::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

const SOURCE: &str = "spectra.c";

/// Compiles spectra.c in `mode` at `opt` with -g into `dir/prog`. The hand-derived paths below are Ball and
/// Larus's, which run from before a loop into its first iteration: built without loop resets
/// (`PATHPROF_LOOP_RESETS=0`; `pathprof_core::ball_larus::resets` has its own tests). The views do not depend
/// on the numbering.
fn build(dir: &Path, mode: &str, opt: &str) -> PathBuf {
    let exe = dir.join("prog");
    run_ok(
        wrapper(false)
            .args([opt, "-g"])
            .arg(programs().join(SOURCE))
            .arg("-o")
            .arg(&exe)
            .env("PATHPROF_MODE", mode)
            .env("PATHPROF_LOOP_RESETS", "0"),
    );
    exe
}

/// Runs `exe` with `args`, profiling into `dir/name`.
fn run(exe: &Path, dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let prof = dir.join(name);
    run_ok(Command::new(exe).args(args).env("PATHPROF_FILE", &prof));
    prof
}

/// Runs A (no argument) and B (one argument) of spectra.c compiled in `mode` at -O0.
fn runs(mode: &str) -> (InScratch, InScratch) {
    let dir = Rc::new(scratch(&format!("views-{mode}")));
    let exe = build(&dir, mode, "-O0");
    (dir.hold_shared(run(&exe, &dir, "a.pathprof", &[])), dir.hold_shared(run(&exe, &dir, "b.pathprof", &["x"])))
}

fn pathprof() -> Command {
    Command::new(dist().join("bin/pathprof"))
}

fn json(args: &[&str], files: &[&Path]) -> Value {
    let out = run_ok(pathprof().args(args).args(files).arg("--json"));
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// The source line holding `needle`.
fn line_of(needle: &str) -> u64 {
    let text = std::fs::read_to_string(programs().join(SOURCE)).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle}")) as u64 + 1
}

/// Whether a path's steps run through the line holding `needle`.
fn through(path: &Value, needle: &str) -> bool {
    path_runs_through(path, line_of(needle))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn top_ranks_the_programs_paths_hottest_first() {
    let (a, _) = runs("path");
    let top = json(&["top", "--limit", "4"], &[&a]);
    assert_eq!(top["mode"], "path");
    assert_eq!(top["executions"], 25, "12 classify paths + 13 main paths");
    assert_eq!(top["executed_paths"], 7);
    assert_eq!(top["left_out"]["functions"], 0);
    let paths = top["paths"].as_array().unwrap();
    let got: Vec<(&str, u64, f64)> = paths
        .iter()
        .map(|p| (p["function"].as_str().unwrap(), p["count"].as_u64().unwrap(), p["percent"].as_f64().unwrap()))
        .collect();
    assert_eq!(got, [("main", 11, 44.0), ("classify", 5, 20.0), ("classify", 4, 16.0), ("classify", 2, 8.0)]);
    // #1: a loop iteration of main after the first (from the loop header: not through `int n`).
    assert!(through(&paths[0], "/* call */") && !through(&paths[0], "int n = 12"));
    // #2: x >= 6 and x % 4 != 0; #3: x < 6 and x % 4 != 0; #4: x < 6 and x % 4 == 0.
    let shape = |p: &Value| (through(p, "/* low */"), through(p, "/* high */"), through(p, "/* quad */"));
    assert_eq!(shape(&paths[1]), (false, true, false));
    assert_eq!(shape(&paths[2]), (true, false, false));
    assert_eq!(shape(&paths[3]), (true, false, true));
    for (i, p) in paths.iter().enumerate() {
        assert_eq!(p["rank"], i + 1);
        assert!(p["id"].is_u64() && !p["steps"].as_array().unwrap().is_empty());
    }

    // Without --limit: all 7 executed paths (fewer than 10), adding up to 25.
    let all = json(&["top"], &[&a]);
    let counts: Vec<u64> = all["paths"].as_array().unwrap().iter().map(|p| p["count"].as_u64().unwrap()).collect();
    assert_eq!(counts, [11, 5, 4, 2, 1, 1, 1]);

    let functions = json(&["top", "--functions"], &[&a]);
    let got: Vec<(&str, u64, f64, u64)> = functions["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = f["function"].as_str().unwrap();
            (
                name,
                f["executions"].as_u64().unwrap(),
                f["percent"].as_f64().unwrap(),
                f["executed_paths"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [("main", 13, 52.0, 3), ("classify", 12, 48.0, 4)]);

    let text = String::from_utf8(run_ok(pathprof().args(["top", "--limit", "1"]).arg(&a)).stdout).unwrap();
    assert!(text.contains("25 path executions in 7 executed paths"), "{text}");
    assert!(text.contains("44.00%") && text.contains(&format!("spectra.c:{}", line_of("/* call */"))), "{text}");
}

/// Context mode: one path per activation of main's loop body, calls into classify included. Run A: the entry
/// path (i = 0), 11 iterations from the loop header (x >= 6 and not a multiple of 4: 5; x < 6 and not: 4 of
/// {1,2,3,5}; 4 and 8 one each) and the exit: 13 paths executions, 6 distinct paths.
#[test]
fn top_ranks_context_paths_across_calls() {
    let (a, _) = runs("context");
    let top = json(&["top", "--limit", "2"], &[&a]);
    assert_eq!(top["mode"], "context");
    assert_eq!(top["executions"], 13);
    assert_eq!(top["executed_paths"], 6);
    let paths = top["paths"].as_array().unwrap();
    assert_eq!(paths.iter().map(|p| p["count"].as_u64().unwrap()).collect::<Vec<_>>(), [5, 4]);
    assert!(close(paths[0]["percent"].as_f64().unwrap(), 500.0 / 13.0));
    for p in paths {
        assert_eq!(p["function"], "main", "a context path belongs to where its active suffix starts");
        assert!(through(p, "/* call */") && !through(p, "/* quad */"));
        assert!(p["steps"].as_array().unwrap().iter().any(|s| s["via"] == "call"));
    }
    assert!(through(&paths[0], "/* high */") && through(&paths[1], "/* low */"));
}

/// A and B's spectra: B (n = 6) never runs classify with x >= 6 and leaves main through the if's then-block.
#[test]
fn diff_finds_new_vanished_and_shifted_paths() {
    let (a, b) = runs("path");
    let d = json(&["diff"], &[&a, &b]);
    assert_eq!((d["a"]["executions"].as_u64(), d["b"]["executions"].as_u64()), (Some(25), Some(13)));
    assert_eq!((d["a"]["executed_paths"].as_u64(), d["b"]["executed_paths"].as_u64()), (Some(7), Some(5)));
    let p = &d["program"];
    assert_eq!((p["new_paths"].as_u64(), p["vanished_paths"].as_u64()), (Some(1), Some(3)));
    let new = &p["new"][0];
    assert_eq!(
        (new["function"].as_str(), new["count_a"].as_i64(), new["count_b"].as_i64()),
        (Some("main"), Some(0), Some(1))
    );
    assert!(through(new, "/* argument */"));
    assert!(close(new["percent_b"].as_f64().unwrap(), 100.0 / 13.0));
    // Vanished, largest first: x >= 6 and not a multiple of 4 (5), then the count-1 ones in profile order: x = 8
    // in classify, main's exit without the argument.
    let vanished: Vec<(&str, i64)> = p["vanished"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["function"].as_str().unwrap(), v["count_a"].as_i64().unwrap()))
        .collect();
    assert_eq!(vanished, [("classify", 5), ("classify", 1), ("main", 1)]);
    assert!(through(&p["vanished"][0], "/* high */") && !through(&p["vanished"][0], "/* quad */"));
    assert!(through(&p["vanished"][1], "/* quad */"));
    assert!(!through(&p["vanished"][2], "/* argument */") && through(&p["vanished"][2], "return 0"));
    // Paths in both runs, largest change of program-wide share first.
    let shifted: Vec<(&str, i64, i64, f64)> = p["share_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let f = s["function"].as_str().unwrap();
            (f, s["count_a"].as_i64().unwrap(), s["count_b"].as_i64().unwrap(), s["delta"].as_f64().unwrap())
        })
        .collect();
    let pct = |n: f64, d: f64| n * 100.0 / d;
    let want = [
        ("classify", 4, 4, pct(4.0, 13.0) - 16.0),
        ("classify", 2, 2, pct(2.0, 13.0) - 8.0),
        ("main", 11, 5, pct(5.0, 13.0) - 44.0),
        ("main", 1, 1, pct(1.0, 13.0) - 4.0),
    ];
    assert_eq!(shifted.len(), want.len());
    for (g, w) in shifted.iter().zip(&want) {
        assert!(g.0 == w.0 && g.1 == w.1 && g.2 == w.2 && close(g.3, w.3), "{g:?} vs {w:?}");
    }
    // ½ Σ |share_B - share_A| over the 8 paths.
    let distance = 0.5
        * (pct(11.0, 25.0) - pct(5.0, 13.0) + pct(4.0, 13.0) - pct(4.0, 25.0) + pct(2.0, 13.0) - pct(2.0, 25.0)
            + pct(1.0, 13.0)
            - pct(1.0, 25.0)
            + pct(1.0, 13.0)
            + pct(5.0, 25.0)
            + pct(1.0, 25.0)
            + pct(1.0, 25.0));
    assert!(close(p["distance"].as_f64().unwrap(), distance), "{} vs {distance}", p["distance"]);

    // Per function, most changed first: classify (distance ½(1/6 + 1/3 + 5/12 + 1/12) = 50%), then main
    // (½(12 + 6 + 7 + 13)/91 = 19/91).
    let fs = d["functions"].as_array().unwrap();
    assert_eq!(fs.len(), 2);
    let (c, m) = (&fs[0], &fs[1]);
    assert_eq!(c["function"], "classify");
    assert_eq!((c["a"]["executions"].as_u64(), c["b"]["executions"].as_u64()), (Some(12), Some(6)));
    assert_eq!((c["new_paths"].as_u64(), c["vanished_paths"].as_u64()), (Some(0), Some(2)));
    assert!(close(c["distance"].as_f64().unwrap(), 50.0));
    assert!(close(c["share_changes"][0]["percent_a"].as_f64().unwrap(), pct(4.0, 12.0)));
    assert!(close(c["share_changes"][0]["percent_b"].as_f64().unwrap(), pct(4.0, 6.0)));
    assert_eq!(m["function"], "main");
    assert_eq!((m["a"]["executions"].as_u64(), m["b"]["executions"].as_u64()), (Some(13), Some(7)));
    assert_eq!((m["new_paths"].as_u64(), m["vanished_paths"].as_u64()), (Some(1), Some(1)));
    assert!(close(m["distance"].as_f64().unwrap(), pct(19.0, 91.0)));

    // A run against itself: the same spectrum.
    let same = json(&["diff"], &[&a, &a]);
    assert_eq!((same["program"]["new_paths"].as_u64(), same["program"]["vanished_paths"].as_u64()), (Some(0), Some(0)));
    assert_eq!(same["program"]["distance"], 0.0);
    assert!(same["functions"].as_array().unwrap().is_empty());

    let text = String::from_utf8(run_ok(pathprof().arg("diff").arg(&a).arg(&b)).stdout).unwrap();
    assert!(text.contains("program: 1 new path, 3 vanished paths"), "{text}");
}

/// Context paths: A's 6 (see top_ranks_context_paths_across_calls); B (n = 6) runs the entry path, the loop
/// body for x in {1,2,3,5} and for 4, and the exit through the then-block: 1 new, 3 vanished.
#[test]
fn diff_compares_context_paths() {
    let (a, b) = runs("context");
    let d = json(&["diff"], &[&a, &b]);
    assert_eq!(d["mode"], "context");
    assert_eq!((d["a"]["executions"].as_u64(), d["b"]["executions"].as_u64()), (Some(13), Some(7)));
    let p = &d["program"];
    assert_eq!((p["new_paths"].as_u64(), p["vanished_paths"].as_u64()), (Some(1), Some(3)));
    assert!(through(&p["new"][0], "/* argument */"));
    let vanished: Vec<i64> = p["vanished"].as_array().unwrap().iter().map(|v| v["count_a"].as_i64().unwrap()).collect();
    assert_eq!(vanished, [5, 1, 1]);
}

/// Per function: lines, branches and paths of run `run` ("a" or "b") as derived in spectra.c.
struct Expected {
    /// (needle, count) per line of classify and main.
    lines: Vec<(&'static str, u64)>,
    /// (needle of the branching line, count of successor 0 (true), of successor 1 (false)).
    branches: Vec<(&'static str, u64, u64)>,
    /// Executed paths of classify and main (of 4 and 6).
    paths: (u64, u64),
}

fn expected(run: &str) -> Expected {
    let a = run == "a";
    let pick = |x: u64, y: u64| if a { x } else { y };
    Expected {
        lines: vec![
            ("if (x < 6)", pick(12, 6)),
            ("/* low */", 6),
            ("/* high */", pick(6, 0)),
            ("if (x % 4 == 0)", pick(12, 6)),
            ("/* quad */", pick(3, 2)), // x in {0, 4, 8} / {0, 4}
            ("end of classify", pick(12, 6)),
            ("int n = 12", 1),
            ("for (int i = 0", pick(13, 7)), // the loop test runs n + 1 times
            ("/* call */", pick(12, 6)),
            ("if (argc > 1)", 1),
            ("/* argument */", pick(0, 1)),
            ("return 0", 1),
        ],
        branches: vec![
            ("if (x < 6)", 6, pick(6, 0)),
            ("if (x % 4 == 0)", pick(3, 2), pick(9, 4)),
            ("for (int i = 0", pick(12, 6), 1),
            ("if (argc > 1)", pick(0, 1), pick(1, 0)),
        ],
        paths: (pick(4, 2), 3),
    }
}

fn check_coverage(cov: &Value, want: &Expected, mode: &str) {
    let fs = cov["functions"].as_array().unwrap();
    let mut lines = Vec::new();
    let mut branches = Vec::new();
    for f in fs {
        assert_eq!(f["exact"], true, "{mode}: {}", f["name"]);
        for l in f["line_counts"].as_array().unwrap() {
            lines.push((l["line"].as_u64().unwrap(), l["count"].as_u64().unwrap()));
        }
        for b in f["branch_counts"].as_array().unwrap() {
            branches.push((b["line"].as_u64().unwrap(), b["succ"].as_u64().unwrap(), b["count"].as_u64().unwrap()));
        }
    }
    lines.sort();
    let mut want_lines: Vec<(u64, u64)> = want.lines.iter().map(|&(n, c)| (line_of(n), c)).collect();
    want_lines.sort();
    assert_eq!(lines, want_lines, "{mode}: line counts");
    let covered_lines = want_lines.iter().filter(|l| l.1 > 0).count() as u64;
    assert_eq!(cov["totals"]["lines"]["covered"].as_u64(), Some(covered_lines), "{mode}");
    assert_eq!(cov["totals"]["lines"]["total"].as_u64(), Some(12), "{mode}");
    assert_eq!(cov["totals"]["functions"]["covered"].as_u64(), Some(2));
    if mode == "block" {
        assert!(branches.is_empty() && fs.iter().all(|f| f["branches"].is_null()), "block mode has no edge counts");
        assert_eq!(cov["totals"]["branches"]["total"], 0);
    } else {
        branches.sort();
        let mut want_branches: Vec<(u64, u64, u64)> =
            want.branches.iter().flat_map(|&(n, t, f)| [(line_of(n), 0, t), (line_of(n), 1, f)]).collect();
        want_branches.sort();
        assert_eq!(branches, want_branches, "{mode}: branch counts");
        let hit = want_branches.iter().filter(|b| b.2 > 0).count() as u64;
        assert_eq!(cov["totals"]["branches"]["covered"].as_u64(), Some(hit), "{mode}");
        assert_eq!(cov["totals"]["branches"]["total"].as_u64(), Some(8), "{mode}");
    }
    let by_name = |n: &str| fs.iter().find(|f| f["name"] == n).unwrap();
    if mode == "path" {
        let p = |n: &str| {
            (by_name(n)["paths"]["executed"].as_u64().unwrap(), by_name(n)["paths"]["possible"].as_u64().unwrap())
        };
        assert_eq!(p("classify"), (want.paths.0, 4));
        assert_eq!(p("main"), (want.paths.1, 6));
        assert_eq!(cov["totals"]["paths"]["covered"].as_u64(), Some(want.paths.0 + want.paths.1));
        assert_eq!(cov["totals"]["paths"]["total"], 10);
    } else {
        assert!(fs.iter().all(|f| f["paths"].is_null()), "{mode}: paths per function only in path mode");
    }
}

#[test]
fn coverage_counts_paths_lines_and_branches_in_every_mode() {
    for mode in ["path", "edge", "block", "context", "piecewise"] {
        let (a, b) = runs(mode);
        let cov_a = json(&["coverage"], &[&a]);
        check_coverage(&cov_a, &expected("a"), mode);
        if mode == "path" || mode == "context" {
            check_coverage(&json(&["coverage"], &[&b]), &expected("b"), mode);
        }
        if mode == "context" {
            // The 6 context paths of run A (see top_ranks_context_paths_across_calls).
            assert_eq!(cov_a["modules"][0]["executed_paths"], 6);
        }
    }
}

/// libarchive's layout: `proj/lib/a.c` compiled by absolute path from `proj/build`, including `proj/lib/h.h`.
/// clang records both names relative to `proj` (`lib/a.c`, `lib/h.h`); only `a.c`'s is revealed by the module's
/// name, so the header was found neither by `coverage --lcov` nor by `report --html`, not even with the
/// compilation directory as `--source-root`. Now a module's other names say where its relative names are.
#[test]
fn a_header_outside_the_compilation_directory_is_found() {
    let dir = scratch("views-header");
    let (lib, build) = (dir.join("proj/lib"), dir.join("proj/build"));
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(&build).unwrap();
    std::fs::write(lib.join("h.h"), "static int twice(int x) {\n  return x > 2 ? 2 * x : x;\n}\n").unwrap();
    let body = "#include \"h.h\"\nint main(int argc, char **argv) {\n  (void)argv;\n  return twice(argc) - argc;\n}\n";
    std::fs::write(lib.join("a.c"), body).unwrap();
    let exe = build.join("a");
    run_ok(
        wrapper(false)
            .current_dir(&build)
            .args(["--pathprof-mode=edge", "-O0", "-g"])
            .arg(lib.join("a.c"))
            .arg("-I")
            .arg(&lib)
            .arg("-o")
            .arg(&exe),
    );
    let prof = build.join("a.pathprof");
    run_ok(Command::new(&exe).current_dir(&build).env("PATHPROF_FILE", &prof));
    let info = dir.join("a.info");
    run_ok(pathprof().current_dir(&dir).arg("coverage").arg(&prof).arg("--lcov").arg(&info));
    let text = std::fs::read_to_string(&info).unwrap();
    let mut named: Vec<PathBuf> = text.lines().filter_map(|l| l.strip_prefix("SF:")).map(PathBuf::from).collect();
    named.sort();
    assert_eq!(named, [lib.join("a.c"), lib.join("h.h")], "{text}");
    let out = run_ok(pathprof().current_dir(&dir).args(["report", "--html", "-o"]).arg(dir.join("site")).arg(&prof));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("not found"), "{err}");
}

/// A make build compiles each file by its relative name in its own directory (`cc -c a.c`, `cd sub && cc -c
/// b.c`): the modules are `a.c` and `b.c`, debug info names `a.c`, `./h.h` and `b.c`, and nothing in the names
/// says where they are. The recorded compilation directories do: the views find every source from elsewhere,
/// also for the program merged by LTO in yet another directory.
#[test]
fn sources_compiled_with_relative_names_are_found_from_anywhere() {
    let dir = scratch("views-relative");
    let (proj, sub) = (dir.join("proj"), dir.join("proj/sub"));
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(proj.join("h.h"), "static int twice(int x) {\n  return x > 2 ? 2 * x : x;\n}\n").unwrap();
    let main = "#include \"h.h\"\nint b(int);\nint main(int argc, char **argv) {\n  (void)argv;\n  return twice(argc) - argc + b(argc);\n}\n";
    std::fs::write(proj.join("a.c"), main).unwrap();
    std::fs::write(sub.join("b.c"), "int b(int x) {\n  if (x > 5)\n    return 1;\n  return 0;\n}\n").unwrap();
    // Per translation unit, linked in `proj`; and whole program (`--pathprof-lto`), linked in `dir`, whose module
    // is the program: its translation units' directories come from their debug info.
    for (lto, link_dir) in [(&[][..], &proj), (&["--pathprof-lto"][..], &dir)] {
        for (cwd, source) in [(&proj, "a.c"), (&sub, "b.c")] {
            run_ok(wrapper(false).current_dir(cwd).args(["--pathprof-mode=edge", "-O0", "-g", "-c", source]).args(lto));
        }
        run_ok(
            wrapper(false)
                .current_dir(link_dir)
                .args(lto)
                .arg(proj.join("a.o"))
                .arg(sub.join("b.o"))
                .args(["-o", "prog"]),
        );
        let prof = link_dir.join("prog.pathprof");
        let _ = std::fs::remove_file(&prof);
        run_ok(Command::new(link_dir.join("prog")).current_dir(&proj).env("PATHPROF_FILE", &prof));
        let elsewhere = scratch("views-relative-elsewhere");
        let info = elsewhere.join("p.info");
        run_ok(pathprof().current_dir(&elsewhere).arg("coverage").arg(&prof).arg("--lcov").arg(&info));
        let text = std::fs::read_to_string(&info).unwrap();
        let mut named: Vec<PathBuf> = text.lines().filter_map(|l| l.strip_prefix("SF:")).map(PathBuf::from).collect();
        named.sort();
        assert_eq!(named, [proj.join("a.c"), proj.join("h.h"), sub.join("b.c")], "lto {lto:?}: {text}");
        let site = elsewhere.join("site");
        let out = run_ok(pathprof().current_dir(&elsewhere).args(["report", "--html", "-o"]).arg(&site).arg(&prof));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("not found"), "lto {lto:?}: {err}");
    }
}

#[test]
fn lcov_tracefile_is_accepted_by_genhtml_with_the_same_counts() {
    let (a, _) = runs("edge");
    let dir = scratch("views-lcov");
    let info = dir.join("a.info");
    // The test compiled spectra.c as programs/spectra.c from the package directory, where cargo runs tests.
    let root = std::env::current_dir().unwrap();
    run_ok(pathprof().arg("coverage").arg(&a).arg("--lcov").arg(&info).arg("--source-root").arg(&root));
    let text = std::fs::read_to_string(&info).unwrap();
    let want = expected("a");
    for (needle, count) in &want.lines {
        assert!(text.lines().any(|l| l == format!("DA:{},{count}", line_of(needle))), "{needle}: {text}");
    }
    for (needle, t, f) in &want.branches {
        let line = line_of(needle);
        assert!(
            text.lines().any(|l| l.starts_with(&format!("BRDA:{line},")) && l.ends_with(&format!(",0,{t}"))),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l.starts_with(&format!("BRDA:{line},")) && l.ends_with(&format!(",1,{f}"))),
            "{text}"
        );
    }
    for l in ["FNDA:12,classify", "FNDA:1,main", "FNF:2", "FNH:2", "LF:12", "LH:11", "BRF:8", "BRH:7", "end_of_record"]
    {
        assert!(text.lines().any(|x| x == l), "{l}: {text}");
    }
    let sf = text.lines().find_map(|l| l.strip_prefix("SF:")).unwrap();
    assert_eq!(std::fs::canonicalize(sf).unwrap(), std::fs::canonicalize(programs().join(SOURCE)).unwrap());

    let html = dir.join("html");
    let genhtml = Command::new("genhtml")
        .args(["--branch-coverage", "--quiet", "-o"])
        .arg(&html)
        .arg(&info)
        .output()
        .expect("genhtml (Debian package lcov; scripts/setup.sh installs it)");
    assert!(genhtml.status.success(), "genhtml failed: {}", String::from_utf8_lossy(&genhtml.stderr));
    let page = find_file(&html, "spectra.c.gcov.html").expect("genhtml wrote the source page");
    let page = std::fs::read_to_string(page).unwrap();
    // genhtml's annotated line: `<span class="lineCov">          3 :   source` (lineNoCov for 0).
    for (needle, count) in &want.lines {
        let escaped = needle.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let row = page.lines().find(|l| l.contains(&escaped)).unwrap_or_else(|| panic!("{needle} not on the page"));
        let class = if *count > 0 { "lineCov" } else { "lineNoCov" };
        let shown = row.split(&format!("class=\"{class}\">")).nth(1).and_then(|r| r.split(" :").next()).map(str::trim);
        assert_eq!(shown, Some(count.to_string().as_str()), "{needle}: {row}");
    }
    let index = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(index.contains(">12<") && index.contains(">11<"), "index shows 11 of 12 lines");
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = find_file(&p, name) {
                return Some(f);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

/// Run A with classify's count-1 path (x = 8) set to -1: a negative path count, so classify's counts are not
/// exact. Its paths are left out (and counted), never ranked or compared as numbers.
#[test]
fn inexact_functions_are_left_out_and_counted() {
    let (a, b) = runs("path");
    let mut p = profile::read(&std::fs::read(&a).unwrap()).unwrap();
    let m = &mut p.modules[0];
    let f = m.meta.functions.iter().find(|f| f.name == "classify").unwrap();
    assert_eq!(f.path.as_ref().unwrap().storage, PathStorage::Dense, "classify's 4 paths are counted densely");
    let base = f.counter_base as usize;
    let slots = &mut m.counters[base..base + 4];
    assert_eq!(slots.iter().filter(|&&c| c == 1).count(), 1, "one path of classify ran once (x = 8)");
    *slots.iter_mut().find(|c| **c == 1).unwrap() = u64::MAX;
    let bad = a.with_file_name("inexact.pathprof");
    std::fs::write(&bad, profile::write(&p)).unwrap();

    let top = json(&["top"], &[&bad]);
    assert_eq!(top["left_out"]["functions"], 1);
    assert_eq!(top["left_out"]["paths"], 3, "classify's three positive paths");
    assert_eq!(top["left_out"]["names"][0], "classify");
    assert_eq!(top["executions"], 13);
    let got: Vec<(&str, u64)> = top["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["function"].as_str().unwrap(), p["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, [("main", 11), ("main", 1), ("main", 1)]);
    let text = String::from_utf8(run_ok(pathprof().arg("top").arg(&bad)).stdout).unwrap();
    assert!(
        text.contains("left out: 1 function whose counts are not exact, with 3 executed paths (classify)"),
        "{text}"
    );

    let d = json(&["diff"], &[&bad, &b]);
    assert_eq!(d["left_out"]["functions"], 1);
    assert_eq!((d["a"]["executions"].as_u64(), d["b"]["executions"].as_u64()), (Some(13), Some(7)));
    assert_eq!((d["program"]["new_paths"].as_u64(), d["program"]["vanished_paths"].as_u64()), (Some(1), Some(1)));

    let dir = scratch("views-inexact");
    let info = dir.join("bad.info");
    let cov: Value = serde_json::from_slice(
        &run_ok(pathprof().arg("coverage").arg(&bad).arg("--json").arg("--lcov").arg(&info)).stdout,
    )
    .unwrap();
    assert_eq!(cov["left_out"]["functions"], 1);
    let classify = cov["functions"].as_array().unwrap().iter().find(|f| f["name"] == "classify").unwrap();
    assert_eq!(classify["exact"], false);
    assert!(classify["lines"].is_null() && classify["branches"].is_null());
    let t = &cov["totals"];
    let ratio = |k: &str| (t[k]["covered"].as_u64().unwrap(), t[k]["total"].as_u64().unwrap());
    assert_eq!(
        (ratio("functions"), ratio("lines"), ratio("branches"), ratio("paths")),
        ((1, 1), (5, 6), (3, 4), (3, 6))
    );
    let lcov = std::fs::read_to_string(&info).unwrap();
    assert!(!lcov.contains("classify") && lcov.contains("FN:") && lcov.contains("LF:6\nLH:5\n"), "{lcov}");
}

/// Bad input: one line on stderr, exit 2.
fn assert_fails(args: &[&std::ffi::OsStr], what: &str) -> String {
    let out = pathprof().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(err.starts_with("pathprof: error: "), "{what}: {err}");
    assert!(out.stdout.is_empty(), "{what}");
    err
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let (a, _) = runs("path");
    let (edge, _) = runs("edge");
    let dir = scratch("views-bad");
    let bytes = std::fs::read(&a).unwrap();
    let truncated = dir.join("truncated.pathprof");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let os = |s: &str| std::ffi::OsString::from(s);
    let (a, edge, truncated) = (a.as_os_str().to_owned(), edge.as_os_str().to_owned(), truncated.into_os_string());
    for cmd in ["top", "coverage"] {
        assert_fails(&[&os(cmd), &truncated], "truncated");
        assert_fails(&[&os(cmd), &os("/nonexistent.pathprof")], "missing");
        assert_fails(&[&os(cmd)], "no file");
    }
    assert_fails(&[&os("diff"), &a, &truncated], "truncated B");
    assert_fails(&[&os("diff"), &a], "one file");
    assert_fails(&[&os("top"), &os("--limit"), &os("ten"), &a], "bad limit");
    let err = assert_fails(&[&os("top"), &edge], "edge profile");
    assert!(err.contains("edge profile") && err.contains("no paths"), "{err}");
    assert_fails(&[&os("diff"), &edge, &edge], "edge profiles");
    assert_fails(&[&os("diff"), &a, &edge], "different programs");
    assert_fails(&[&os("coverage"), &a, &os("--lcov"), &os("/nonexistent-dir/a.info")], "unwritable lcov");
}

/// Two builds of one program (same source and output, -O0 then -O1): diff refuses, as merge does.
#[test]
fn diff_refuses_profiles_of_different_builds() {
    let dir = scratch("views-builds");
    let exe = build(&dir, "path", "-O0");
    let a = run(&exe, &dir, "a.pathprof", &[]);
    let exe = build(&dir, "path", "-O1");
    let b = run(&exe, &dir, "b.pathprof", &[]);
    let err = assert_fails(&[std::ffi::OsStr::new("diff"), a.as_os_str(), b.as_os_str()], "different builds");
    assert!(err.contains("different builds of module"), "{err}");
    // merge refuses them too, naming both files, also when they are many (several merge workers).
    let out = dir.join("m.pathprof");
    let mut args = vec![std::ffi::OsStr::new("merge"), std::ffi::OsStr::new("-o"), out.as_os_str()];
    args.extend(std::iter::repeat_n(a.as_os_str(), 9));
    args.push(b.as_os_str());
    let err = assert_fails(&args, "merge of different builds");
    assert!(err.contains("different builds") || err.contains("different binaries"), "{err}");
    assert!(!out.exists(), "nothing written");
}

/// `merge` of many profiles: parallel workers over contiguous runs of inputs give byte for byte what merging all
/// at once gives (the format crate's `merge`, a second method), the counts add up as derived by hand, and
/// nothing is printed when stderr is not a terminal.
#[test]
fn merge_of_many_runs_equals_the_one_shot_merge() {
    let dir = scratch("views-merge-many");
    let exe = build(&dir, "path", "-O0");
    // 41 runs, argc = 1..=4 in turn: n = 12, 6, 4, 3 gives 25, 13, 4 + 5, 3 + 4 path executions.
    let per_argc = [25u64, 13, 9, 7];
    let mut inputs = Vec::new();
    let mut want = 0u64;
    for i in 0..41 {
        let args: Vec<String> = (0..i % 4).map(|k| k.to_string()).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        inputs.push(run(&exe, &dir, &format!("run{i}.pathprof"), &args));
        want += per_argc[i % 4];
    }
    let out = dir.join("merged.pathprof");
    let merged = run_ok(pathprof().arg("merge").args(&inputs).arg("-o").arg(&out));
    assert!(merged.stderr.is_empty(), "no progress output without a terminal");
    let all: Vec<_> = inputs.iter().map(|p| profile::read(&std::fs::read(p).unwrap()).unwrap()).collect();
    let one_shot = profile::write(&profile::merge(&all).unwrap());
    assert!(std::fs::read(&out).unwrap() == one_shot, "parallel merge differs from the one-shot merge");
    let top = json(&["top"], &[&out]);
    assert_eq!(top["executions"].as_u64(), Some(want));
    assert_eq!(p_runs(&out), 41);
}

/// Two programs of one build share a library's module and have a `main` each (a test suite's programs, Mbed
/// TLS's 103): their `%p` files merge into what one shared file holds — module by module, the shared module's
/// counts and runs summed. Before, `merge` refused them ("the profiles come from different binaries").
#[test]
fn merge_adds_up_the_programs_of_one_build() {
    let dir = scratch("views-merge-programs");
    std::fs::write(
        dir.join("lib.c"),
        "int lib_f(int x) { int s = 0; for (int i = 0; i < x; i++) s += (i & 1) ? i : 2 * i; return s; }\n",
    )
    .unwrap();
    std::fs::write(dir.join("a.c"), "int lib_f(int);\nint main(void) { return lib_f(10) == 0; }\n").unwrap();
    std::fs::write(
        dir.join("b.c"),
        "int lib_f(int);\nstatic int g(int x) { return x > 3 ? lib_f(x) : 0; }\nint main(void) { return g(7) == 0; }\n",
    )
    .unwrap();
    for mode in ["edge", "path", "context"] {
        let objs: Vec<PathBuf> = ["lib", "a", "b"].iter().map(|n| dir.join(format!("{n}-{mode}.o"))).collect();
        for (n, o) in ["lib", "a", "b"].iter().zip(&objs) {
            run_ok(
                wrapper(false)
                    .arg(format!("--pathprof-mode={mode}"))
                    .arg("-O1")
                    .arg("-c")
                    .arg(dir.join(format!("{n}.c")))
                    .arg("-o")
                    .arg(o),
            );
        }
        let shared = dir.join(format!("shared-{mode}.pathprof"));
        let mut apart = Vec::new();
        for (name, main) in [("a", &objs[1]), ("b", &objs[2])] {
            let exe = dir.join(format!("{name}-{mode}"));
            run_ok(wrapper(false).arg(&objs[0]).arg(main).arg("-o").arg(&exe));
            for file in [shared.clone(), dir.join(format!("{name}-{mode}.pathprof"))] {
                let status = Command::new(&exe).env("PATHPROF_FILE", &file).status().unwrap();
                assert_eq!(status.code(), Some(0), "{mode} {name}: lib_f(..) is not 0");
            }
            apart.push(dir.join(format!("{name}-{mode}.pathprof")));
        }
        let out = dir.join(format!("merged-{mode}.pathprof"));
        run_ok(pathprof().arg("merge").args(&apart).arg("-o").arg(&out));
        let read = |p: &Path| {
            let mut m = profile::read(&std::fs::read(p).unwrap()).unwrap().modules;
            m.sort_by_key(|m| m.meta_hash);
            m
        };
        let (merged, one_file) = (read(&out), read(&shared));
        assert_eq!(merged.len(), 3, "{mode}: lib.c, a.c and b.c");
        assert_eq!(merged, one_file, "{mode}: the merge of the programs' files is the shared file");
        let lib = merged.iter().find(|m| m.meta.module_name.ends_with("lib.c")).unwrap();
        assert_eq!(lib.runs, 2, "{mode}: both programs ran lib.c");
    }
}

/// The run count of a one-module profile.
fn p_runs(p: &Path) -> u64 {
    profile::read(&std::fs::read(p).unwrap()).unwrap().modules[0].runs
}
