//! Trace mode end to end: programs built with `--pathprof-mode=trace` at -O0 and -O2, their traces regenerated
//! by `pathprof trace`, checked against a second method — edge mode's exact block and edge counts of the same
//! deterministic run — and against block sequences derived by hand.

use pathprof_test_suite::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

/// Builds `source` (one file, or several separated by spaces) in `mode` at `opt` into `dir`, runs it; returns
/// (exit code, output file).
fn build_and_run(dir: &Path, source: &str, mode: &str, opt: &str) -> (i32, PathBuf) {
    build_and_run_with(dir, source, mode, opt, &[])
}

/// [`build_and_run`], the program run with `args`.
fn build_and_run_with(dir: &Path, source: &str, mode: &str, opt: &str, args: &[&str]) -> (i32, PathBuf) {
    let exe = dir.join(format!("prog-{mode}"));
    let mut cmd = wrapper(source.ends_with(".cpp"));
    cmd.arg(format!("--pathprof-mode={mode}")).args([opt, "-g", "-pthread"]);
    for s in source.split_whitespace() {
        cmd.arg(programs().join(s));
    }
    run_ok(cmd.arg("-o").arg(&exe));
    let out_file = dir.join(if mode == "trace" { "out.pathtrace" } else { "out.pathprof" });
    let out = Command::new(&exe)
        .args(args)
        .env("PATHPROF_TRACE", &out_file)
        .env("PATHPROF_FILE", &out_file)
        .output()
        .expect("run program");
    assert!(
        out_file.exists(),
        "{source} {mode} {opt}: nothing written; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), out_file)
}

fn trace_json(trace: &Path, extra: &[&str]) -> Value {
    let out = run_ok(Command::new(dist().join("bin/pathprof")).arg("trace").arg("--json").args(extra).arg(trace));
    serde_json::from_slice(&out.stdout).expect("trace --json prints JSON")
}

type Counts = BTreeMap<String, (Vec<u64>, BTreeMap<(u64, u64), u64>)>;

/// Per executed function: block counts and traced-edge counts (summed over parallel edges).
fn trace_counts(summary: &Value) -> Counts {
    let mut out = Counts::new();
    for f in summary["functions"].as_array().unwrap() {
        let blocks = f["blocks"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).collect();
        let mut edges = BTreeMap::new();
        for e in f["edges"].as_array().unwrap() {
            *edges.entry((e["from"].as_u64().unwrap(), e["to"].as_u64().unwrap())).or_default() +=
                e["count"].as_u64().unwrap();
        }
        out.insert(f["function"].as_str().unwrap().to_string(), (blocks, edges));
    }
    out
}

/// The same from edge mode's `show --json` (functions that ran; branch and return edges).
fn edge_counts(show: &Value) -> Counts {
    let mut out = Counts::new();
    for f in show["functions"].as_array().unwrap() {
        let mut blocks: Vec<u64> =
            f["blocks"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).collect();
        // A fork()ed child resuming a block is a re-entry in edge mode's count; a trace counts a child's own
        // blocks only from the fork on (the block it resumes ran in the parent).
        for r in f["fork_reentries"].as_array().unwrap() {
            blocks[r["block"].as_u64().unwrap() as usize] -= r["count"].as_u64().unwrap();
        }
        if blocks.iter().all(|&n| n == 0) {
            continue;
        }
        let mut edges = BTreeMap::new();
        for e in f["edges"].as_array().unwrap() {
            *edges.entry((e["from"].as_u64().unwrap(), e["to"].as_u64().unwrap())).or_default() +=
                e["count"].as_u64().unwrap();
        }
        let name = f["display_name"].as_str().filter(|s| !s.is_empty()).or(f["name"].as_str()).unwrap();
        out.insert(name.to_string(), (blocks, edges));
    }
    out
}

/// The trace's derived counts equal edge mode's for the same run, and the trace's status is `status`.
fn check_against_edge_mode(source: &str, status_prefix: &str) {
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-{source}{opt}"));
        let (rc_trace, trace) = build_and_run(&dir, source, "trace", opt);
        let (rc_edge, prof) = build_and_run(&dir, source, "edge", opt);
        assert_eq!(rc_trace, rc_edge, "{source} {opt}: exit code differs between modes");
        let summary = trace_json(&trace, &["--summary"]);
        for t in summary["threads"].as_array().unwrap() {
            let status = t["status"].as_str().unwrap();
            assert!(status.starts_with(status_prefix), "{source} {opt}: thread status {status}");
        }
        let ours = trace_counts(&summary);
        let theirs = edge_counts(&show_json(&prof));
        assert!(!ours.is_empty(), "{source} {opt}: nothing traced");
        assert_eq!(ours, theirs, "{source} {opt}: trace-derived counts differ from edge mode's");
    }
}

#[test]
fn mixed_program_counts_equal_edge_mode() {
    check_against_edge_mode("trace_mix.c", "complete");
}

/// The same trace in the previous file layout (version 8): its data words first bit lowest (`trace_layout`,
/// `REC_DATA`).
fn as_version_8(file: &[u8]) -> Vec<u8> {
    use pathprof_format::trace_layout::{FILE_HEADER, RECORD_HEADER, REC_DATA};
    let mut out = file.to_vec();
    out[4..8].copy_from_slice(&8u32.to_le_bytes());
    let mut at = FILE_HEADER;
    while at < out.len() {
        let kind = u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
        let len = u64::from_le_bytes(out[at + 16..at + 24].try_into().unwrap()) as usize;
        let payload = at + RECORD_HEADER;
        if kind == REC_DATA {
            // After the first word's index.
            for w in out[payload + 8..payload + len].chunks_exact_mut(8) {
                let v = u64::from_le_bytes((&*w).try_into().unwrap()).reverse_bits();
                w.copy_from_slice(&v.to_le_bytes());
            }
        }
        at = payload + len;
    }
    out
}

#[test]
fn a_trace_of_the_previous_layout_reads_the_same() {
    let dir = scratch("trace-layout-8");
    let (rc, trace) = build_and_run(&dir, "trace_mix.c", "trace", "-O2");
    assert_eq!(rc, 0);
    let old = dir.join("old.pathtrace");
    std::fs::write(&old, as_version_8(&std::fs::read(&trace).unwrap())).unwrap();
    let summary = trace_json(&trace, &["--summary"]);
    assert!(summary["threads"][0]["bits"].as_u64().unwrap() > 128, "a trace of several words");
    assert_eq!(trace_json(&trace, &[]), trace_json(&old, &[]));
    assert_eq!(summary, trace_json(&old, &["--summary"]));
}

#[test]
fn threads_each_regenerate_and_sum_to_edge_mode() {
    check_against_edge_mode("trace_threads.c", "complete");
    let dir = scratch("trace-threads-n");
    let (_, trace) = build_and_run(&dir, "trace_threads.c", "trace", "-O2");
    let summary = trace_json(&trace, &["--summary"]);
    assert_eq!(summary["threads"].as_array().unwrap().len(), 3, "main and two workers");
}

#[test]
fn exit_from_a_callee_is_cut_short_and_exact_up_to_there() {
    check_against_edge_mode("trace_exit.c", "cut short: the process exited inside g");
    // Hand-derived at -O0: main's loop runs f → g three times; g's third activation (i == 2) calls exit().
    let dir = scratch("trace-exit-seq");
    let (rc, trace) = build_and_run(&dir, "trace_exit.c", "trace", "-O0");
    assert_eq!(rc, 3);
    let steps = sequence(&trace_json(&trace, &[]));
    let functions: Vec<&str> = steps.iter().map(|(f, _, _)| f.as_str()).collect();
    let mut want = vec!["main", "main"];
    for i in 0..3 {
        want.extend(["main", "f", "g", "g"]);
        if i < 2 {
            want.extend(["main", "main"]);
        }
    }
    assert_eq!(functions, want);
    // The last block is the one with the exit() call (line 5).
    assert_eq!(steps.last().unwrap().2, vec![5]);
}

/// (function, block, lines) of the single thread's steps.
fn sequence(json: &Value) -> Vec<(String, u64, Vec<u64>)> {
    let threads = json["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1);
    threads[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let lines = s["lines"].as_array().unwrap().iter().map(|l| l.as_u64().unwrap()).collect();
            (s["function"].as_str().unwrap().to_string(), s["block"].as_u64().unwrap(), lines)
        })
        .collect()
}

#[test]
fn tiny_program_regenerates_the_hand_derived_sequence() {
    // -O0: main's blocks in IR order are entry (lines 4-5), for.cond (5), for.body (6, calls sq), for.inc (5),
    // for.end (7); sq is one block (2). i = 0, 1, 2, then the test fails.
    let dir = scratch("trace-tiny");
    let (rc, trace) = build_and_run(&dir, "trace_tiny.c", "trace", "-O0");
    assert_eq!(rc, 0);
    let json = trace_json(&trace, &[]);
    assert_eq!(json["threads"][0]["status"], "complete");
    let got: Vec<(String, u64)> = sequence(&json).into_iter().map(|(f, b, _)| (f, b)).collect();
    let mut want = vec![("main", 0), ("main", 1)];
    for _ in 0..3 {
        want.extend([("main", 2), ("sq", 0), ("main", 3), ("main", 1)]);
    }
    want.push(("main", 4));
    let want: Vec<(String, u64)> = want.into_iter().map(|(f, b)| (f.to_string(), b)).collect();
    assert_eq!(got, want);
    // --last 2: the loop's final test and the return.
    let last = sequence(&trace_json(&trace, &["--last", "2"]));
    assert_eq!(last.iter().map(|(f, b, _)| (f.clone(), *b)).collect::<Vec<_>>(), want[want.len() - 2..]);
    // -O2: sq is inlined and the loop folded; the trace still starts in main's entry and ends on line 7's block.
    let (_, trace) = build_and_run(&dir, "trace_tiny.c", "trace", "-O2");
    let steps = sequence(&trace_json(&trace, &[]));
    assert_eq!((steps[0].0.as_str(), steps[0].1), ("main", 0));
    assert!(steps.last().unwrap().2.contains(&7), "{steps:?}");
}

/// A thread still in a loop without decisions when the process exits (trace_inflight.c): the reader used to
/// walk that loop forever (`pathprof trace` spun for minutes on QuickJS's worker threads). Now the thread reads
/// back cut short inside the loop, its counts not vouched for, and the main thread complete; at -O0 and -O2.
#[test]
fn a_thread_left_in_a_loop_without_decisions_reads_back_cut_short() {
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-inflight{opt}"));
        let exe = build_with(&dir, "trace_inflight.c", "inflight", &[], opt);
        let trace = dir.join("inflight.pathtrace");
        assert!(Command::new(&exe).env("PATHPROF_TRACE", &trace).status().unwrap().success());
        let out = Command::new("timeout")
            .args(["60", dist().join("bin/pathprof").to_str().unwrap(), "trace", "--summary", "--json"])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(out.status.success(), "{opt}: {}", String::from_utf8_lossy(&out.stderr));
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        let statuses: Vec<&str> =
            json["threads"].as_array().unwrap().iter().map(|t| t["status"].as_str().unwrap()).collect();
        assert_eq!(statuses.len(), 2, "{opt}: {statuses:?}");
        assert!(statuses.contains(&"complete"), "{opt}: {statuses:?}");
        assert!(
            statuses.iter().any(|s| s.contains("spin") && s.contains("loop without decisions")),
            "{opt}: {statuses:?}"
        );
        let spin = json["functions"].as_array().unwrap().iter().find(|f| f["name"] == "spin").unwrap();
        assert_eq!(spin["exact"], false, "{opt}: {spin}");
    }
}

/// A process killed before its trace had a thread (trace_killed.c, SIGKILL): the listing would be empty, so
/// `pathprof trace` says why on one line, and exits 0 (the file is sound).
#[test]
fn a_trace_without_threads_says_so() {
    let dir = scratch("trace-killed");
    let exe = build_with(&dir, "trace_killed.c", "killed", &[], "-O1");
    let trace = dir.join("killed.pathtrace");
    let status = Command::new(&exe).env("PATHPROF_TRACE", &trace).status().unwrap();
    assert_eq!(status.signal(), Some(9));
    let out = Command::new(dist().join("bin/pathprof")).arg("trace").arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no thread in") && err.contains("killed"), "{err}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = scratch("trace-bad");
    let cases: [(&str, &[u8]); 3] =
        [("empty", b""), ("magic", b"PPTX\x01\0\0\0"), ("truncated", b"PPTR\x01\0\0\0\x02\0\0\0")];
    for (name, bytes) in cases {
        let f = dir.join(name);
        std::fs::write(&f, bytes).unwrap();
        let out = Command::new(dist().join("bin/pathprof")).arg("trace").arg(&f).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
    }
}

/// The records of a trace file: (kind, offset of the record header, payload length).
fn records(bytes: &[u8]) -> Vec<(u32, usize, usize)> {
    use pathprof_format::trace_layout::{FILE_HEADER, RECORD_HEADER};
    let mut out = Vec::new();
    let mut at = FILE_HEADER;
    while at + RECORD_HEADER <= bytes.len() {
        let kind = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let len = u64::from_le_bytes(bytes[at + 16..at + 24].try_into().unwrap()) as usize;
        out.push((kind, at, len));
        at += RECORD_HEADER + len;
    }
    out
}

/// A trace file that ends inside a record — a write that failed part-way (a full disk: the runtime then writes
/// nothing more), or a copy cut short — reads up to there: the records before the cut, and the whole words of
/// a cut data record, the thread incomplete (no end record), with one warning. The second method is the
/// runtime's own prefix: the same run capped by PATHPROF_TRACE_MAX after its first 512 KiB data record. Cut in
/// the header of the next data record, the file holds exactly that prefix, and regenerates into exactly as many
/// blocks; cut 64 KiB into that record's payload, into more, and fewer than the whole run. Before, every cut
/// file was an error.
#[test]
fn a_trace_cut_inside_a_record_reads_up_to_the_cut() {
    use pathprof_format::trace_layout::{REC_DATA, REC_END};
    let dir = scratch("trace-cut");
    let exe = build_with(&dir, "trace_long.c", "long", &[], "-O1");
    let (whole, capped) = (dir.join("whole.pathtrace"), dir.join("capped.pathtrace"));
    assert!(Command::new(&exe).env("PATHPROF_TRACE", &whole).output().unwrap().status.success());
    let out = Command::new(&exe).env("PATHPROF_TRACE", &capped).env("PATHPROF_TRACE_MAX", "600K").output().unwrap();
    assert!(out.status.success());
    let blocks = |json: &Value| json["threads"][0]["blocks"].as_u64().unwrap();
    let (all, prefix) = (blocks(&trace_json(&whole, &["--summary"])), blocks(&trace_json(&capped, &["--summary"])));
    assert!(prefix > 0 && prefix < all, "{prefix} of {all}");

    let bytes = std::fs::read(&whole).unwrap();
    let recs = records(&bytes);
    let data: Vec<_> = recs.iter().filter(|r| r.0 == REC_DATA).collect();
    assert!(data.len() >= 2, "two data records at least: {recs:?}");
    let end = recs.iter().find(|r| r.0 == REC_END).expect("an end record");
    let second = data[1].1;
    let read_cut = |name: &str, len: usize| {
        let f = dir.join(name);
        std::fs::write(&f, &bytes[..len]).unwrap();
        let out =
            Command::new(dist().join("bin/pathprof")).args(["trace", "--summary", "--json"]).arg(&f).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains("ends inside a record"), "{name}: {err}");
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        let status = json["threads"][0]["status"].as_str().unwrap().to_string();
        assert!(status.starts_with("incomplete: records are missing"), "{name}: {status}");
        assert!(json["functions"].as_array().unwrap().iter().all(|f| f["exact"] == false), "{name}");
        blocks(&json)
    };
    assert_eq!(read_cut("in-header", second + 10), prefix, "cut in the second data record's header");
    let more = read_cut("in-payload", second + 24 + 65536 + 5);
    assert!(more > prefix && more < all, "{prefix} < {more} < {all}");
    // Cut into the end record: every data word is there; only the end's partial word is not.
    let nearly = read_cut("in-end", end.1 + 30);
    assert!(nearly >= more && nearly <= all, "{more} <= {nearly} <= {all}");
}

// ---------------------------------------------------------------------------------------------------------
// The second method: naive tracing (`--pathprof-trace-naive`: one item per block entered, no regeneration).

/// One process's trace: per thread (status, bits, branches, steps as (function, block)).
type Threads = Vec<(String, u64, u64, Vec<(String, u64)>)>;

/// Each thread of `trace --json` output with the thread number its `relation` names (`handlers_of`,
/// `context_of`), if any.
fn related_threads(json: &Value, relation: &str) -> Vec<(u64, Option<u64>)> {
    let threads = json["threads"].as_array().unwrap();
    threads.iter().map(|t| (t["thread"].as_u64().unwrap(), t[relation].as_u64())).collect()
}

/// Builds `source` at `opt` with `flags` (plus trace mode) as `dir/name`.
fn build_with(dir: &Path, source: &str, name: &str, flags: &[&str], opt: &str) -> PathBuf {
    let exe = dir.join(name);
    let mut cmd = match flags.first() {
        Some(&"plain") => Command::new(if source.ends_with(".cpp") { "clang++-19" } else { "clang-19" }),
        _ => {
            let mut w = wrapper(source.ends_with(".cpp"));
            w.arg("--pathprof-mode=trace").args(flags);
            w
        }
    };
    cmd.args([opt, "-g", "-pthread"]);
    for s in source.split_whitespace() {
        cmd.arg(programs().join(s));
    }
    run_ok(cmd.arg("-o").arg(&exe));
    exe
}

/// The files in `dir` whose names start with `prefix`.
fn files_starting(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let named = |f: &PathBuf| f.file_name().unwrap().to_str().unwrap().starts_with(prefix);
    std::fs::read_dir(dir).unwrap().map(|f| f.unwrap().path()).filter(named).collect()
}

/// The pid in a trace file's name (`…-%p.pathtrace`).
fn pid_of(file: &Path) -> u32 {
    let name = file.file_name().unwrap().to_str().unwrap();
    name.trim_end_matches(".pathtrace").rsplit('-').next().unwrap().parse().unwrap()
}

/// Runs `exe args` with one trace file per process (`%p`) and the fatal-signal flush on; returns the exit
/// status and each process's threads, in the order the processes started.
fn run_traced(exe: &Path, args: &[&str]) -> (std::process::ExitStatus, Vec<Threads>) {
    let dir = exe.parent().unwrap();
    let stem = exe.file_name().unwrap().to_str().unwrap().to_string();
    let status = Command::new(exe)
        .args(args)
        .env("PATHPROF_TRACE", dir.join(format!("{stem}-%p.pathtrace")))
        .env("PATHPROF_SIGNALS", "1")
        .status()
        .expect("run program");
    let files = files_starting(dir, &format!("{stem}-"));
    let mut procs = BTreeMap::new();
    for f in &files {
        let json = trace_json(f, &[]);
        let summary = trace_json(f, &["--summary"]);
        let mut threads: Threads = Vec::new();
        for (t, s) in json["threads"].as_array().unwrap().iter().zip(summary["threads"].as_array().unwrap()) {
            let steps = trace_steps(t);
            threads.push((
                t["status"].as_str().unwrap().to_string(),
                s["bits"].as_u64().unwrap(),
                s["branches"].as_u64().unwrap(),
                steps,
            ));
        }
        threads.sort_by(|a, b| a.3.cmp(&b.3));
        // By pid: the order the processes started (a test forks a handful, far from a wrap-around).
        procs.insert(pid_of(f), threads);
    }
    // Only now: a fork child's file is read with its parent's.
    files.iter().for_each(|f| std::fs::remove_file(f).unwrap());
    (status, procs.into_values().collect())
}

/// Bit tracing regenerates exactly the naive trace's block sequence, thread by thread and process by process,
/// and counts the same conditional branches; both runs end like the plain clang build. Returns the optimal run's
/// processes.
fn optimal_equals_naive(source: &str, args: &[&str], status_prefix: &str) -> Vec<Threads> {
    let mut last = Vec::new();
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-naive-{source}{opt}"));
        let plain = build_with(&dir, source, "plain", &["plain"], opt);
        let opt_exe = build_with(&dir, source, "optimal", &[], opt);
        let naive_exe = build_with(&dir, source, "naive", &["--pathprof-trace-naive"], opt);
        let want = Command::new(&plain).args(args).status().unwrap();
        let (s1, optimal) = run_traced(&opt_exe, args);
        let (s2, naive) = run_traced(&naive_exe, args);
        assert_eq!((s1.code(), s1.signal()), (want.code(), want.signal()), "{source} {opt}: optimal run's status");
        assert_eq!((s2.code(), s2.signal()), (want.code(), want.signal()), "{source} {opt}: naive run's status");
        assert_eq!(optimal.len(), naive.len(), "{source} {opt}: processes");
        for (p, (o, n)) in optimal.iter().zip(&naive).enumerate() {
            assert_eq!(o.len(), n.len(), "{source} {opt}: threads of process {p}");
            for (t, (a, b)) in o.iter().zip(n).enumerate() {
                assert!(a.0.starts_with(status_prefix), "{source} {opt}: optimal status {}", a.0);
                assert!(!b.3.is_empty(), "{source} {opt}: the naive trace is empty");
                assert_eq!(a.3, b.3, "{source} {opt}: process {p} thread {t}: regenerated blocks differ from naive");
                assert_eq!(a.2, b.2, "{source} {opt}: process {p} thread {t}: branches differ");
                assert_eq!(b.1, 64 * b.3.len() as u64, "{source} {opt}: one naive item per block");
            }
        }
        last = optimal;
    }
    last
}

use std::os::unix::process::ExitStatusExt;

/// A loop entered in the middle (trace_mid_entry.c, re2c's scanners) is not deferred to its exit: it
/// regenerates exactly, block for block as the naive trace, and its counts equal edge mode's, at -O0 (where the
/// deferred version's trace never ended) and -O2 (one iteration too many).
#[test]
fn a_loop_entered_in_the_middle_regenerates_exactly() {
    optimal_equals_naive("trace_mid_entry.c", &[], "complete");
    check_against_edge_mode("trace_mid_entry.c", "complete");
}

#[test]
fn recursion_switch_and_qsort_callback_regenerate_exactly() {
    let procs = optimal_equals_naive("trace_mix.c", &[], "complete");
    assert!(procs[0][0].3.iter().filter(|(f, _)| f == "cmp").count() > 40, "qsort called back into cmp");
}

/// Computed gotos: threaded_interp.c's `run` dispatches through one `indirectbr` (clang sends every `goto *` to
/// it), whose decision each target writes first thing; `halt` is entered from the jump (listed three times) and
/// from a plain branch, so it selects the token by predecessor. Regenerates exactly at -O0 and -O2, and its
/// counts equal edge mode's. By hand: four runs of the 19-word program execute 2 + 6 × 10 + 2 = 64
/// instructions each, the empty program one, so the jump is taken 257 times, to 9 distinct handlers.
#[test]
fn computed_gotos_regenerate_exactly() {
    let procs = optimal_equals_naive("threaded_interp.c", &[], "complete");
    assert!(procs[0][0].3.iter().any(|(f, _)| f == "run"), "run is traced");
    check_against_edge_mode("threaded_interp.c", "complete");
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-indirect{opt}"));
        let (_, trace) = build_and_run(&dir, "threaded_interp.c", "trace", opt);
        let summary = trace_json(&trace, &["--summary"]);
        assert_eq!(summary["not_traced"].as_array().map(Vec::len), Some(0), "{opt}: {}", summary["not_traced"]);
        let (blocks, edges) = &trace_counts(&summary)["run"];
        // The dispatch block: the one block with nine successors.
        let mut succs: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for &(from, to) in edges.keys() {
            succs.entry(from).or_default().push(to);
        }
        let dispatch: Vec<u64> = succs.iter().filter(|(_, to)| to.len() == 9).map(|(&b, _)| b).collect();
        assert_eq!(dispatch.len(), 1, "{opt}: one dispatch block: {succs:?}");
        assert_eq!(blocks[dispatch[0] as usize], 257, "{opt}: dispatches");
    }
}

/// Exceptions caught in untraced code: trace_abandon.cpp's streambuf throws from `refill` through `underflow`,
/// which libstdc++'s `istream::get` (untraced) called, and `get` catches it. The traced call site that called
/// `get` finds a deeper activation's state and writes an abandon marker: the trace stays complete and equals
/// the naive one at -O0 and -O2 (before, it ended there as an abnormal transfer). By hand: each of the four
/// streams fails at its third refill, so four markers; the first costs `1`, a cache miss flag and the 20-bit
/// reserved id, the others `1`, a hit flag and the 6-bit slot, each then the 32-bit depth and the 32-bit call
/// site number: 86 + 3 × 72 bits.
#[test]
fn exceptions_caught_in_untraced_code_regenerate_exactly() {
    let procs = optimal_equals_naive("trace_abandon.cpp", &[], "complete");
    assert_eq!(procs[0][0].3.iter().filter(|(f, b)| f == "underflow" && *b == 0).count(), 12, "underflow calls");
    check_against_edge_mode("trace_abandon.cpp", "complete");
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-abandon{opt}"));
        let (_, trace) = build_and_run(&dir, "trace_abandon.cpp", "trace", opt);
        let kinds = count_and_bits(&trace_json(&trace, &["--bits"])["categories"], "kind");
        let marker = kinds["abandon marker (exception or longjmp caught in untraced code)"];
        assert_eq!(marker, (4, 86 + 3 * 72), "{opt}");
    }
}

/// A program that defines a C library function itself (trace_libc_named.c calls `getenv`, which
/// trace_libc_named_lib.c defines, as bash does): the optimiser takes the calls for the C library's, which only
/// reads memory, and carried the thread state's words across them — the accumulator stored after one call was
/// loaded back after the next, and the traced callee's bits were lost (every bash trace read back corrupt). Now
/// exact: equal to the naive trace at -O0 and -O2 and to edge mode's counts; by hand getenv is entered 24 times.
#[test]
fn calls_of_a_c_library_name_the_program_defines_keep_the_callees_bits() {
    let source = "trace_libc_named.c trace_libc_named_lib.c";
    let procs = optimal_equals_naive(source, &[], "complete");
    assert_eq!(procs[0][0].3.iter().filter(|(f, b)| f == "getenv" && *b == 0).count(), 24);
    check_against_edge_mode(source, "complete");
}

#[test]
fn threads_regenerate_exactly() {
    let procs = optimal_equals_naive("trace_threads.c", &[], "complete");
    assert_eq!(procs[0].len(), 3, "main and two workers");
}

/// A handler that runs traced code on the thread it interrupts, 200,000 times, anywhere — inside a spill of a
/// full word, inside a buffer's flush, between a spill and the store of the bits after it, between a call
/// site's announcement and its callee's entry. Each handler runs in the thread's handler stream, so main's
/// stream stays whole: both streams are complete, main's loop body runs 20,000,000 times, and `work` is entered
/// once per iteration and 100 times per handler run. Before
/// handler streams, main's trace stopped at the first handler (an abnormal transfer); before the runtime
/// guarded its spills, 6 of 13 runs gave unreadable traces ("bad bit count", "activation of unknown
/// function").
#[test]
fn a_signal_handler_never_corrupts_the_interrupted_threads_trace() {
    let source = "signal_handover.c";
    let text = std::fs::read_to_string(programs().join(source)).unwrap();
    let call_line = 1 + text.lines().position(|l| l.contains("work(i); // expect")).unwrap() as u64;
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-signals{opt}"));
        for (name, flags) in [("optimal", &[][..]), ("naive", &["--pathprof-trace-naive"][..])] {
            let exe = build_with(&dir, source, name, flags, opt);
            for run in 0..2 {
                let trace = dir.join(format!("{name}-{run}.pathtrace"));
                let out = Command::new(&exe).env("PATHPROF_TRACE", &trace).output().expect("run program");
                assert!(out.status.success(), "{name} {opt} run {run}: {:?}", out.status);
                let json = trace_json(&trace, &["--summary"]);
                let threads = json["threads"].as_array().unwrap();
                // main's stream (thread 1, the first to run traced code), the killer's, main's handler stream.
                let serving: Vec<Option<u64>> = threads.iter().map(|t| t["handlers_of"].as_u64()).collect();
                assert!(serving.iter().all(|h| h.is_none() || *h == Some(1)), "{name} {opt} run {run}: {serving:?}");
                assert_eq!(serving.iter().filter(|h| h.is_none()).count(), 2, "{name} {opt} run {run}: {serving:?}");
                for t in threads {
                    assert_eq!(t["status"], "complete", "{name} {opt} run {run}");
                }
                let functions = json["functions"].as_array().unwrap();
                let blocks = |f: &str| {
                    let f = functions.iter().find(|g| g["function"] == f);
                    f.map_or(vec![], |f| f["blocks"].as_array().unwrap().clone())
                };
                let entries = |f: &str| blocks(f).first().map_or(0, |b| b["count"].as_u64().unwrap());
                let bodies: u64 = blocks("main")
                    .iter()
                    .filter(|b| b["lines"].as_array().unwrap().iter().any(|l| l.as_u64() == Some(call_line)))
                    .map(|b| b["count"].as_u64().unwrap())
                    .sum();
                assert_eq!(bodies, 20_000_000, "{name} {opt} run {run}");
                assert_eq!(entries("work"), 20_000_000 + 100 * entries("handler"), "{name} {opt} run {run}");
                std::fs::remove_file(&trace).unwrap();
            }
        }
    }
}

/// Signal handlers that run traced code in the middle of traced bodies (trace_handlers.c: page faults whose
/// handler maps the page and returns, one nested in a handler, a raised signal whose handler raises another)
/// run in handler streams of their own: every stream is complete, regenerates exactly the naive trace at -O0
/// and -O2, and the counts equal edge mode's. By hand (see the program): `work` runs 1,185 times, the SIGSEGV
/// handler 5 times; the streams are main's, its handlers', and the nested handler's (a handler stream of the
/// handler stream).
#[test]
fn signal_handlers_run_in_streams_of_their_own_and_regenerate_exactly() {
    let procs = optimal_equals_naive("trace_handlers.c", &[], "complete");
    let threads = &procs[0];
    assert_eq!(threads.len(), 3, "main, its handlers, the nested handler");
    let entries = |f: &str| threads.iter().flat_map(|t| &t.3).filter(|(g, b)| g == f && *b == 0).count();
    assert_eq!((entries("work"), entries("on_segv"), entries("on_usr1"), entries("on_usr2")), (1185, 5, 10, 10));
    check_against_edge_mode("trace_handlers.c", "complete");
    let dir = scratch("trace-handler-streams");
    let (_, trace) = build_and_run(&dir, "trace_handlers.c", "trace", "-O2");
    let json = trace_json(&trace, &["--summary"]);
    assert_eq!(related_threads(&json, "handlers_of"), [(1, None), (2, Some(1)), (3, Some(2))]);
    let out = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary"]).arg(&trace));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("thread 3 (signal handlers of thread 2, process "), "{text}");
}

/// User contexts, switched as coroutine libraries switch them (trace_contexts.c: generators that yield with
/// `swapcontext` and return through `uc_link`, a switch from four activations deep, a context abandoned when
/// its `ucontext_t` is made anew, one left with `setcontext`, one still suspended at exit): each context is a
/// stream of its own, and every stream regenerates exactly the naive trace's at -O0 and -O2 — before, main's
/// stream was incomplete at its first switch and nothing after it was shown. The streams of contexts never
/// switched back to end exact ("cut short"), so the counts equal edge mode's; `work` runs 10 times (by hand,
/// see the program).
#[test]
fn user_contexts_run_in_streams_of_their_own_and_regenerate_exactly() {
    let procs = optimal_equals_naive("trace_contexts.c", &[], "");
    let threads = &procs[0];
    let statuses = |prefix: &str| threads.iter().filter(|t| t.0.starts_with(prefix)).count();
    assert_eq!(
        (
            threads.len(),
            statuses("complete"),
            statuses("cut short: suspended in a user context the program never switched back to"),
            statuses("cut short: suspended in a user context when the process ended"),
        ),
        (7, 4, 2, 1),
        "{:?}",
        threads.iter().map(|t| &t.0).collect::<Vec<_>>()
    );
    let work = threads.iter().flat_map(|t| &t.3).filter(|(f, b)| f == "work" && *b == 0).count();
    assert_eq!(work, 10);
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-contexts{opt}"));
        let (rc_trace, trace) = build_and_run(&dir, "trace_contexts.c", "trace", opt);
        let (rc_edge, prof) = build_and_run(&dir, "trace_contexts.c", "edge", opt);
        assert_eq!((rc_trace, rc_edge), (0, 0), "{opt}");
        let summary = trace_json(&trace, &["--summary"]);
        assert_eq!(trace_counts(&summary), edge_counts(&show_json(&prof)), "{opt}: trace-derived counts differ");
        let want: Vec<(u64, Option<u64>)> = (1..=7).map(|n| (n, (n > 1).then_some(1))).collect();
        assert_eq!(related_threads(&summary, "context_of"), want, "{opt}: every context is made by main's stream");
        // Region mode without a region: nothing is kept, and only the three contexts left inside their function
        // say they were suspended (those whose function returned are not).
        let regions = dir.join("regions.pathtrace");
        let out = Command::new(dir.join("prog-trace"))
            .env("PATHPROF_TRACE", &regions)
            .env("PATHPROF_TRACE_REGION", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{opt}");
        let json = trace_json(&regions, &["--summary"]);
        let threads = json["threads"].as_array().unwrap();
        let suspended = threads.iter().filter(|t| t["status"].as_str().unwrap().contains("suspended")).count();
        assert_eq!((threads.len(), suspended), (7, 3), "{opt}: {threads:?}");
        assert!(threads.iter().all(|t| t["blocks"] == 0), "{opt}");
    }
}

/// A `longjmp` from one stack to another (trace_jump_stacks.c: a context's function jumps back into main's
/// frame, as coroutines switched with setjmp/longjmp do): the landing is none of the jumping stream's
/// activations, so the stream is `incomplete` at the jump — before, the resync marker fit no activation and the
/// reader refused the whole file as corrupt. Main's stream, parked in its context, ends suspended; the counts
/// are not vouched for (`exact` false).
#[test]
fn a_longjmp_to_another_stacks_frame_leaves_the_stream_incomplete_not_corrupt() {
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-jump-stacks{opt}"));
        let (rc, trace) = build_and_run(&dir, "trace_jump_stacks.c", "trace", opt);
        assert_eq!(rc, 0, "{opt}");
        let summary = trace_json(&trace, &["--summary"]);
        let statuses: Vec<&str> =
            summary["threads"].as_array().unwrap().iter().map(|t| t["status"].as_str().unwrap()).collect();
        assert_eq!(statuses.len(), 2, "{opt}: {statuses:?}");
        assert!(statuses[0].starts_with("cut short: suspended in a user context when the process ended"), "{opt}");
        assert!(statuses[1].starts_with("incomplete: an abnormal transfer") && statuses[1].contains("inside co"));
        let functions = summary["functions"].as_array().unwrap();
        assert!(!functions.is_empty() && functions.iter().all(|f| f["exact"] == false), "{opt}: {functions:?}");
    }
}

/// A SIGSEGV handler that leaves through `siglongjmp` (trace_handlers.c with an argument, as libsigsegv's
/// stack-overflow continuation): main's stream is regenerable up to the fault and the handler stream up to the
/// `siglongjmp`, both marked incomplete there — each a prefix of the naive trace's stream — and the thread goes
/// on in a stream read from a sync point at the landing, whose blocks are the end of the naive trace's main
/// stream (naive items need no regeneration: the landing gives the thread main's stream back). Both methods
/// count the three `work` calls of the handler that left and the five after the landing: 1,185 + 3 + 5.
#[test]
fn a_handler_left_through_siglongjmp_ends_the_streams_where_they_were_left_and_the_thread_goes_on() {
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-handler-escape{opt}"));
        let optimal = build_with(&dir, "trace_handlers.c", "optimal", &[], opt);
        let naive = build_with(&dir, "trace_handlers.c", "naive", &["--pathprof-trace-naive"], opt);
        let (s1, o) = run_traced(&optimal, &["escape"]);
        let (s2, n) = run_traced(&naive, &["escape"]);
        assert!(s1.success() && s2.success(), "{opt}: {s1:?} {s2:?}");
        let (o, n) = (&o[0], &n[0]);
        let work = |ts: &Threads| ts.iter().flat_map(|t| &t.3).filter(|(f, b)| f == "work" && *b == 0).count();
        assert_eq!((work(o), work(n)), (1193, 1193), "{opt}");
        let (resumed, streams): (Vec<_>, Vec<_>) = o.iter().partition(|t| t.0.starts_with("thread 1 going on"));
        assert_eq!((resumed.len(), streams.len(), n.len()), (1, 3, 3), "{opt}");
        assert!(resumed[0].0.ends_with("ran to the thread's end"), "{opt}: {}", resumed[0].0);
        let main_naive = &n.iter().find(|t| t.3[0].0 == "main").unwrap().3;
        assert!(main_naive.ends_with(&resumed[0].3), "{opt}: the resumed stream is not how main's naive one ends");
        assert!(resumed[0].3.iter().filter(|(f, b)| f == "work" && *b == 0).count() == 5, "{opt}");
        let mut left = 0;
        for (a, b) in streams.iter().zip(n) {
            assert!(b.3.starts_with(&a.3), "{opt}: an optimal stream is not a prefix of the naive one");
            if a.0.starts_with("incomplete: an abnormal transfer") {
                left += 1;
            } else {
                assert_eq!((a.0.as_str(), &a.3), ("complete", &b.3), "{opt}");
            }
        }
        assert_eq!(left, 2, "{opt}: main's stream and its handler stream end where they were left");
    }
}

#[test]
fn exit_under_running_threads_writes_traces_that_read_back() {
    // The exit flush wrote each running thread's buffer while the thread refilled it: a word went out under
    // the next one's index, the first was lost, and the thread's end wrote the same index again. 27 of 300
    // runs of this program (and 14 of liburcu's 1,111 fork children) gave a file the reader refuses. Now the
    // exit claims an idle thread's record (it drops its later words) and ends one busy inside the runtime
    // with the words already written.
    // The fatal-signal flush ended running threads the same way: 73 of 300 `abort`s gave refused files.
    let dir = scratch("trace-exit-running");
    let exe = build_with(&dir, "trace_exit_running.c", "prog", &[], "-O2");
    for run in 0..400 {
        let trace = dir.join(format!("run-{run}.pathtrace"));
        let abort = run % 2 == 1;
        let out = Command::new(&exe)
            .args(if abort { &["abort"][..] } else { &[][..] })
            .env("PATHPROF_TRACE", &trace)
            .env("PATHPROF_SIGNALS", "1")
            .output()
            .expect("run program");
        if abort {
            assert_eq!(std::os::unix::process::ExitStatusExt::signal(&out.status), Some(6), "run {run}");
        } else {
            assert!(out.status.success(), "run {run}: {:?}", out.status);
        }
        let json = trace_json(&trace, &["--summary"]);
        let threads = json["threads"].as_array().unwrap();
        // main and up to three threads (one that has not entered traced code yet has no stream).
        assert!((1..=4).contains(&threads.len()), "run {run}: {json}");
        for t in threads {
            let status = t["status"].as_str().unwrap();
            assert!(status == "complete" || status.starts_with("cut short"), "run {run}: {status}");
        }
        std::fs::remove_file(&trace).unwrap();
    }
}

#[test]
fn exit_mid_call_regenerates_exactly() {
    optimal_equals_naive("trace_exit.c", &[], "cut short: the process exited");
}

#[test]
fn segv_flushes_the_crashing_thread_up_to_the_fault() {
    let procs = optimal_equals_naive("trace_crash.c", &[], "cut short: fatal signal 11");
    // The crash is in the third leaf: down(2)'s recursion (i = 2 in main) reaches n == 0 the third time.
    let steps = &procs[0][0].3;
    assert_eq!(steps.last().unwrap().0, "down");
}

#[test]
fn abort_flushes_the_crashing_thread_up_to_the_signal() {
    optimal_equals_naive("trace_crash.c", &["abort"], "cut short: fatal signal 6");
}

#[test]
fn fork_child_and_parent_regenerate_exactly_and_sum_to_edge_mode() {
    let procs = optimal_equals_naive("trace_fork.c", &[], "");
    assert_eq!(procs.len(), 2, "parent and child");
    assert_eq!(procs[0][0].0, "complete");
    assert!(procs[1][0].0.contains("fork child"), "{}", procs[1][0].0);
    fork_tree_sums_to_edge_mode("trace_fork.c", &[], 2);
}

/// trace_fork_main.c: a child forked before its parent's thread wrote a whole word opens its own file only at
/// its end, after the module destructor has unlisted the module; the module's metadata, "written" in the
/// parent's file, was in no file of the child ("corrupt trace: activation of unknown function 0"). Now a fork
/// child writes every module's metadata into its own file.
#[test]
fn a_child_forked_before_any_word_was_written_regenerates() {
    let procs = optimal_equals_naive("trace_fork_main.c", &[], "");
    assert_eq!(procs.len(), 2, "parent and child");
    assert!(procs[1][0].0.contains("fork child"), "{}", procs[1][0].0);
    fork_tree_sums_to_edge_mode("trace_fork_main.c", &[], 2);
}

/// Runs `source args` in trace mode (one file per process) and in edge mode, at -O0 and -O2: `processes` trace
/// files, every thread regenerated without a gap, and their counts summed (a fork child's only from the fork
/// on) equal edge mode's. Returns the trace files of the -O2 run, in the order the processes started.
fn fork_tree_sums_to_edge_mode(source: &str, args: &[&str], processes: usize) -> Vec<InScratch> {
    let mut kept = Vec::new();
    for opt in ["-O0", "-O2"] {
        let dir = Rc::new(scratch(&format!("trace-fork-sum-{source}{opt}")));
        let exe = build_with(&dir, source, "optimal", &[], opt);
        let pattern = dir.join("t-%p.pathtrace");
        assert!(Command::new(&exe).args(args).env("PATHPROF_TRACE", &pattern).status().unwrap().success());
        let mut files = files_starting(&dir, "t-");
        files.sort_by_key(|f| pid_of(f));
        assert_eq!(files.len(), processes, "{source} {opt}: trace files");
        let mut sum = Counts::new();
        for f in &files {
            let summary = trace_json(f, &["--summary"]);
            for t in summary["threads"].as_array().unwrap() {
                let status = t["status"].as_str().unwrap();
                assert!(!status.starts_with("incomplete"), "{source} {opt} {}: {status}", f.display());
            }
            for (name, (blocks, edges)) in trace_counts(&summary) {
                let e = sum.entry(name).or_insert_with(|| (vec![0; blocks.len()], BTreeMap::new()));
                for (x, y) in e.0.iter_mut().zip(&blocks) {
                    *x += y;
                }
                for (k, v) in edges {
                    *e.1.entry(k).or_default() += v;
                }
            }
        }
        let (rc, prof) = build_and_run_with(&dir, source, "edge", opt, args);
        assert_eq!(rc, 0, "{source} {opt}: the edge build's exit");
        // Functions a child never ran after the fork show zero counts in its summary: drop all-zero entries.
        sum.retain(|_, (b, _)| b.iter().any(|&n| n > 0));
        assert_eq!(sum, edge_counts(&show_json(&prof)), "{source} {opt}: summed trace counts differ from edge mode's");
        kept = files.into_iter().map(|f| dir.hold_shared(f)).collect();
    }
    kept
}

#[test]
fn a_fork_child_takes_what_its_parent_had_written_from_the_parents_file() {
    // Three million decisions before each fork, each writing about two bits: more than a runtime buffer of
    // bits (2^22) per process, so each parent has written to its file before it forks, and the grandchild's
    // stream starts in two files.
    let files = fork_tree_sums_to_edge_mode("trace_fork_late.c", &["3000000"], 3);
    let bits = |f: &Path| trace_json(f, &["--summary"])["threads"][0]["bits"].as_u64().unwrap();
    assert!(bits(&files[0]) > 1 << 22, "the parent wrote a buffer before the fork: {}", bits(&files[0]));
    assert!(bits(&files[1]) > 2 << 22, "the child wrote one of its own: {}", bits(&files[1]));
    // Without its parent's file the child says where what it inherited was, and counts nothing it cannot vouch for.
    let moved = files[0].with_extension("moved");
    std::fs::rename(&files[0], &moved).unwrap();
    let status = trace_json(&files[1], &["--summary"])["threads"][0]["status"].as_str().unwrap().to_string();
    let want = format!("what it inherited from its parent is in {}", files[0].display());
    assert!(status.starts_with("incomplete: a fork child's thread") && status.contains(&want), "{status}");
    // Files moved together to another directory are found beside the child's.
    let elsewhere = scratch("trace-fork-moved");
    std::fs::rename(&moved, elsewhere.join(files[0].file_name().unwrap())).unwrap();
    std::fs::rename(&files[1], elsewhere.join(files[1].file_name().unwrap())).unwrap();
    let status = trace_json(&elsewhere.join(files[1].file_name().unwrap()), &["--summary"])["threads"][0]["status"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(status.contains("a fork child: its first"), "{status}");
}

#[test]
fn fork_children_that_write_no_trace_are_named_in_the_parents() {
    // Without %p a fork child writes no trace (it would write over its parent's); the parent's file says so.
    let dir = scratch("trace-fork-untraced");
    let exe = build_with(&dir, "trace_fork_late.c", "optimal", &[], "-O2");
    let trace = dir.join("t.pathtrace");
    assert!(Command::new(&exe).arg("1000").env("PATHPROF_TRACE", &trace).status().unwrap().success());
    let files = files_starting(&dir, "t.");
    assert_eq!(files.len(), 1, "one trace file: {files:?}");
    let out = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary", "--json"]).arg(&trace));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The child and the grandchild (forked from the child, which inherited the same file).
    assert_eq!(json["untraced_forks"].as_array().map(Vec::len), Some(2), "{json}");
    assert!(stderr.contains(": 2 processes forked from process ") && stderr.contains("wrote no trace"), "{stderr}");
    assert_eq!(json["threads"][0]["status"], "complete");
    // With %p the same run names none.
    let dir = scratch("trace-fork-traced");
    let exe = build_with(&dir, "trace_fork_late.c", "optimal", &[], "-O2");
    assert!(Command::new(&exe)
        .arg("1000")
        .env("PATHPROF_TRACE", dir.join("t-%p.pathtrace"))
        .status()
        .unwrap()
        .success());
    for f in files_starting(&dir, "t-") {
        assert!(trace_json(&f, &["--summary"]).get("untraced_forks").is_none(), "{}", f.display());
    }
}

/// A fork child's stream goes on from the fork in the child's own thread, so the thread id its `REC_END` names is
/// the child's. It named the parent's thread (the id taken when the stream started, before the fork): found on
/// the corpus, where ninja's `-t browse` child's trace read "process 10242, tid 10241". Each process here has one
/// thread, its main thread, whose id is the process's id (the number in its file's name).
#[test]
fn a_fork_childs_thread_is_named_by_its_own_id() {
    let dir = scratch("trace-fork-tid");
    let exe = build_with(&dir, "trace_fork_late.c", "optimal", &[], "-O2");
    let pattern = dir.join("t-%p.pathtrace");
    assert!(Command::new(&exe).arg("1000").env("PATHPROF_TRACE", &pattern).status().unwrap().success());
    let mut files = files_starting(&dir, "t-");
    files.sort_by_key(|f| pid_of(f));
    assert_eq!(files.len(), 3, "parent, child and grandchild: {files:?}");
    for (i, f) in files.iter().enumerate() {
        let summary = trace_json(f, &["--summary"]);
        let threads = summary["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 1, "{}: {threads:?}", f.display());
        let pid = u64::from(pid_of(f));
        assert_eq!(threads[0]["pid"].as_u64(), Some(pid), "{}", f.display());
        assert_eq!(threads[0]["tid"].as_u64(), Some(pid), "{}: {}", f.display(), threads[0]);
        assert_eq!(threads[0]["status"].as_str().unwrap().contains("fork child"), i > 0, "{}", threads[0]);
    }
}

#[test]
fn a_late_fork_regenerates_exactly() {
    // The naive trace's 64 bits per block fill a buffer before each fork: the splice holds for naive items too.
    let procs = optimal_equals_naive("trace_fork_late.c", &["20000"], "");
    assert_eq!(procs.len(), 3, "parent, child and grandchild");
}

#[test]
fn longjmp_resyncs_and_regenerates_exactly() {
    // deep(1) longjmps back to main's setjmp: a resync marker drops deep's activation and main goes on from
    // the setjmp call's second return (n == 1, the loop is left).
    let procs = optimal_equals_naive("trace_longjmp.c", &[], "complete");
    let steps = &procs[0][0].3;
    assert!(steps.iter().filter(|(f, _)| f == "deep").count() >= 2, "{steps:?}");
    assert_eq!(steps.last().unwrap().0, "main");
}

#[test]
fn a_constructor_calling_another_module_before_main_regenerates_exactly() {
    for sources in ["ctor_early_main.c ctor_early_helper.c", "ctor_early_helper.c ctor_early_main.c"] {
        let procs = optimal_equals_naive(sources, &[], "complete");
        let entries = |name: &str| procs[0][0].3.iter().filter(|(f, b)| f == name && *b == 0).count();
        assert_eq!((entries("helper"), entries("init_early"), entries("main")), (2, 1, 1), "{sources}");
    }
}

#[test]
fn builtin_longjmp_resyncs_and_regenerates_exactly() {
    // __builtin_setjmp/__builtin_longjmp are intrinsics: call sites all the same (a resync at the setjmp's
    // second return), or the trace read as corrupt after the first jump.
    let procs = optimal_equals_naive("builtin_setjmp.c", &[], "complete");
    let entries = procs[0][0].3.iter().filter(|(f, b)| f == "jump_if" && *b == 0).count();
    assert_eq!(entries, 10, "{:?}", procs[0][0].3);
}

#[test]
fn longjmp_across_recursion_to_a_nested_setjmp_regenerates_exactly() {
    let procs = optimal_equals_naive("trace_longjmp2.c", &[], "complete");
    assert!(procs[0][0].3.iter().filter(|(f, _)| f == "rec").count() > 10);
}

#[test]
fn calls_to_a_pure_function_of_another_module_keep_its_bits() {
    // Found on xz's tests (`lzma_vli_size` is declared pure): with the declaration's `memory(read)` kept, the
    // caller's bit accumulator stayed in a register across the call and overwrote the callee's bits.
    optimal_equals_naive("trace_pure_main.c trace_pure_lib.c", &[], "complete");
}

#[test]
fn calls_to_a_pure_function_from_an_inlined_extern_inline_body_keep_its_bits() {
    // Found on GMP's tests (t-nextprime, t-perfpow, t-pprime_p): gmp.h's `extern inline` mpz_perfect_square_p
    // calls mpn_perfect_square_p, declared pure, of another module. The copy's call kept its `memory(read)`,
    // and once the copy was inlined into traced code, the caller kept its bit accumulator in a register across
    // the call: the callee's bits and its entry-cache slot were lost (the trace read back one call short), or,
    // where the callee filled a word, spliced in, and the reader took them for an entry of an empty slot
    // ("activation of unknown function 4294967295").
    let sources = "trace_pure_inline_main.c trace_pure_inline_lib.c";
    let procs = optimal_equals_naive(sources, &[], "complete");
    let steps = &procs[0][0].3;
    // By the source: v[r % 16] > 1 for 23 of the 40 rounds, each calling weight once.
    assert_eq!(steps.iter().filter(|(f, b)| f == "weight" && *b == 0).count(), 23);
    check_against_edge_mode(sources, "complete");
}

#[test]
fn direct_indirect_and_untraced_caller_entries_regenerate_exactly() {
    // Direct calls announce their callee (a one-bit entry); the program mixes them with every other kind of
    // entry: indirect calls, qsort's callbacks, a direct callee replaced by another module's traced function
    // (its entry is not the announced one), by untraced code calling back (the callback is the site's first
    // activation) or calling nothing (the site's Done comes first), or longjmp'ing (a resync marker at a
    // fresh direct site), direct recursion, and an atexit handler entered at the top level.
    let procs = optimal_equals_naive("trace_direct.c trace_direct_lib.c", &[], "complete");
    let steps = &procs[0][0].3;
    let entries = |f: &str| steps.iter().filter(|(g, b)| g == f && *b == 0).count();
    // By hand: 12 iterations; hop calls cb twice for even i (6 × 2); leaf (the other module's) 12 times;
    // twice 12 direct + 12 indirect; fib(i % 7) for i < 12 enters fib 1+1+3+5+9+15+25 + 1+1+3+5+9 times.
    assert_eq!(entries("cb"), 12);
    assert_eq!(entries("leaf"), 12);
    assert_eq!(entries("twice"), 24);
    assert_eq!(entries("fib"), 1 + 1 + 3 + 5 + 9 + 15 + 25 + 1 + 1 + 3 + 5 + 9);
    assert_eq!(entries("bye"), 1);
    assert!(entries("cmp") >= 23, "qsort called back into cmp");
    // The weak definitions this file replaces never run.
    assert_eq!(entries("hop") + entries("bail"), 0);
}

/// `musttail` calls (trace_musttail.c): the caller's activation ends at the tail call and the callee's follows
/// at the caller's caller's call site — at a direct site that announced the caller (which then does not bind
/// it), at a would-be certain site of a static caller, through a table of handlers, and into the C library
/// (one call calling back). Regenerates exactly at -O0 and -O2, the counts equal edge mode's, and the
/// activations are the hand-derived ones (the program's comment).
#[test]
fn tail_calls_regenerate_exactly() {
    let procs = optimal_equals_naive("trace_musttail.c", &[], "complete");
    let steps = &procs[0][0].3;
    let entries = |name: &str| steps.iter().filter(|(f, b)| f == name && *b == 0).count();
    for (f, n) in [
        ("is_even", 501 + 6),
        ("is_odd", 501 + 5),
        ("op_inc", 9),
        ("op_dbl", 9),
        ("op_loop", 9),
        ("op_halt", 1),
        ("run_prog", 1),
        ("wrap", 3),
        ("twice", 3),
        ("say", 2),
        ("find", 1),
    ] {
        assert_eq!(entries(f), n, "{f}");
    }
    assert!(entries("cmp_int") >= 1, "bsearch called back into cmp_int");
    // A tail callee runs after its caller's last block: op_halt right after op_loop's.
    let halt = steps.iter().position(|(f, _)| f == "op_halt").unwrap();
    assert_eq!(steps[halt - 1].0, "op_loop");
    check_against_edge_mode("trace_musttail.c", "complete");
}

/// The program's destructors run after the `atexit` handlers (destructors.c): the threads end at the last
/// module destructor, so a trace holds what they ran and is complete — before, it read back complete without
/// them. Returning from `main` and `exit` from a callee; `quick_exit` runs no destructor and ends the threads
/// at once. The counts equal edge mode's, the entries as the program's comment derives them.
#[test]
fn what_destructors_run_is_in_the_trace() {
    for (args, status) in [(&[][..], "complete"), (&["x"][..], "cut short"), (&["q"][..], "cut short")] {
        let procs = optimal_equals_naive("destructors.c", args, status);
        let steps = &procs[0][0].3;
        let entries = |name: &str| steps.iter().filter(|(f, b)| f == name && *b == 0).count();
        let (last, want) = if args == ["q"] { ("on_quick_exit", (0, 0, 0)) } else { ("bye", (1, 10, 1)) };
        assert_eq!((entries("bye"), entries("helper"), entries("at_exit_fn")), want, "{args:?}");
        assert_eq!(steps.last().unwrap().0, last, "{args:?}: what runs last");
    }
    check_against_edge_mode("destructors.c", "complete");
}

#[test]
fn exceptions_regenerate_exactly() {
    // Throws caught several frames up, through a frame without landing pads (pass_through), a cleanup that
    // resumes (with_cleanup's Guard), a rethrow, catch(...), a throw caught in its own frame (local) and
    // through a recursion with cleanups: each landing pad's unwind marker drops the frames the exception left.
    let procs = optimal_equals_naive("trace_exceptions.cpp", &[], "complete");
    let steps = &procs[0][0].3;
    let entries = |name: &str| steps.iter().filter(|(f, b)| f == name && *b == 0).count();
    // By the source (no arguments: i = 1..=40): 40 calls of rethrower, with_cleanup, pass_through and leaf,
    // 40 of local, recurse(6) … recurse(0): 7. Every Guard (40 in with_cleanup, 7 in recurse) is destroyed
    // once, normally or by a cleanup while unwinding.
    for (f, n) in [("rethrower", 40), ("with_cleanup", 40), ("pass_through", 40), ("leaf", 40), ("local", 40)] {
        assert_eq!(entries(f), n, "{f}");
    }
    assert_eq!((entries("recurse"), entries("Guard"), entries("~Guard")), (7, 47, 47));
    assert_eq!(steps.last().unwrap().0, "main");
}

#[test]
fn exception_counts_equal_edge_mode() {
    // The unwind edges the markers cross count as edge mode counts them (an invoke's successor 1).
    check_against_edge_mode("trace_exceptions.cpp", "complete");
}

#[test]
fn kept_calls_to_const_functions_are_listed() {
    // sed's gnulib tests: `(void) gl_sockets_startup (…)` (declared const) is dropped by an ordinary build and
    // kept by the trace build, whose calls lose the promise; and 13 calls of `gl_locale_name_default` are one
    // in edge mode. The trace's summary names such callees so a comparison can tell the two builds apart.
    let dir = scratch("trace-kept");
    let exe = build_with(&dir, "trace_const_main.c trace_const_lib.c", "kept", &[], "-O2");
    let trace = dir.join("kept.pathtrace");
    assert!(Command::new(&exe).env("PATHPROF_TRACE", &trace).status().unwrap().success());
    let summary = trace_json(&trace, &["--summary"]);
    let kept: Vec<&str> = summary["kept_calls"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(kept, vec!["answer", "twice"], "the const and pure callees, not the plain one");
    // The trace build runs every call of the source: answer 3 times (results unused twice), twice 4 times.
    let counts = trace_counts(&summary);
    assert_eq!(counts["answer"].0[0], 3);
    assert_eq!(counts["twice"].0[0], 4);
    // Edge mode's build of the same sources merges and drops them (the calls' promises stand there): the
    // difference is the optimiser's, not a tracing error — 1 call of answer, 3 of twice (twice(argc) merged).
    let edge_exe = dir.join("edge");
    let mut cmd = wrapper(false);
    cmd.args(["--pathprof-mode=edge", "-O2", "-g"]);
    for s in ["trace_const_main.c", "trace_const_lib.c"] {
        cmd.arg(programs().join(s));
    }
    run_ok(cmd.arg("-o").arg(&edge_exe));
    let prof = dir.join("edge.pathprof");
    assert!(Command::new(&edge_exe).env("PATHPROF_FILE", &prof).status().unwrap().success());
    let edge = edge_counts(&show_json(&prof));
    assert_eq!((edge["answer"].0[0], edge["twice"].0[0], edge["plain"].0[0]), (1, 3, 1));
    assert_eq!(counts["plain"].0[0], 1, "a call without promises runs as in every build");
}

#[test]
fn size_limit_keeps_a_regenerable_prefix_and_says_so() {
    let dir = scratch("trace-max");
    let opt_exe = build_with(&dir, "trace_long.c", "capped", &[], "-O1");
    let naive_exe = build_with(&dir, "trace_long.c", "naive", &["--pathprof-trace-naive"], "-O1");
    let capped = dir.join("capped.pathtrace");
    let out = Command::new(&opt_exe).env("PATHPROF_TRACE", &capped).env("PATHPROF_TRACE_MAX", "600K").output().unwrap();
    let plain = Command::new(&naive_exe).env("PATHPROF_TRACE", dir.join("naive.pathtrace")).output().unwrap();
    assert_eq!((out.status.code(), &out.stdout), (plain.status.code(), &plain.stdout), "behaviour unchanged");
    // One 512 KiB record fits under 600 KiB, the second does not.
    let size = std::fs::metadata(&capped).unwrap().len();
    assert!(size > 512 * 1024 && size < 600 * 1024, "{size} bytes");
    let summary = trace_json(&capped, &["--summary"]);
    let status = summary["threads"][0]["status"].as_str().unwrap();
    assert!(status.starts_with("cut short: the trace reached its size limit"), "{status}");
    assert!(
        summary["functions"].as_array().unwrap().iter().all(|f| f["exact"] == false),
        "a prefix is no run's counts"
    );
    // The kept prefix regenerates (a corrupt one is an error) into fewer blocks than the whole run, and more
    // than one bit per kept loop decision allows (the loop writes about one bit per iteration).
    let whole = trace_json(&dir.join("naive.pathtrace"), &["--summary"]);
    let (kept, all) =
        (summary["threads"][0]["blocks"].as_u64().unwrap(), whole["threads"][0]["blocks"].as_u64().unwrap());
    assert!(kept > 2_000_000 && kept < all, "{kept} of {all}");
    let last = trace_json(&capped, &["--last", "3"]);
    assert_eq!(last["threads"][0]["steps"].as_array().unwrap().len(), 3);
}

/// A program run with its standard output closed (`>&-`, as test suites do to check write errors) keeps it
/// closed under the runtime: the trace file, opened when the first 512 KiB buffer fills (8 M branches here,
/// before the program writes), must not take descriptor 1. The program writes to stdout and exits 3 when that
/// fails with EBADF — as the plain build does —, 4 if the write went somewhere.
#[test]
fn a_closed_stdout_stays_closed() {
    let dir = scratch("trace-closed-stdout");
    let src = dir.join("closed.c");
    std::fs::write(
        &src,
        "#include <errno.h>\n#include <unistd.h>\n\
         volatile unsigned sink;\n\
         int main(void) {\n\
           for (unsigned i = 0; i < 8000000; i++) if ((i * 2654435761u) >> 31) sink++;\n\
           if (write(1, \"x\", 1) == 1) return 4;\n\
           return errno == EBADF ? 3 : 5;\n\
         }\n",
    )
    .unwrap();
    for (name, flags) in
        [("plain", vec![]), ("trace", vec!["--pathprof-mode=trace"]), ("edge", vec!["--pathprof-mode=edge"])]
    {
        let exe = dir.join(name);
        let mut cmd = if name == "plain" { Command::new("clang-19") } else { wrapper(false) };
        run_ok(cmd.args(&flags).args(["-O2", "-g"]).arg(&src).arg("-o").arg(&exe));
        let out = dir.join(format!("{name}.out"));
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("exec '{}' >&-", exe.display()))
            .env("PATHPROF_TRACE", &out)
            .env("PATHPROF_FILE", &out)
            .status()
            .expect("run program");
        assert_eq!(status.code(), Some(3), "{name}: the program's write to its closed stdout did not fail with EBADF");
        if name == "trace" {
            let summary = trace_json(&out, &["--summary"]);
            assert_eq!(summary["threads"][0]["status"], "complete", "{summary}");
        }
    }
}

/// The trace file, which the runtime holds open for the whole run, is on a descriptor out of the program's way:
/// `fd_leak_check.c` asserts, as gnulib's spawn tests do in their child, that 3–9 are closed (m4's
/// test-spawn-pipe.sh failed in trace mode: the file held descriptor 3). Profiles are opened only to be written.
#[test]
fn the_trace_file_leaves_the_low_descriptors_free() {
    let dir = scratch("trace-fd-leak");
    for (name, flags) in [("trace", "--pathprof-mode=trace"), ("edge", "--pathprof-mode=edge")] {
        let exe = dir.join(name);
        run_ok(wrapper(false).args([flags, "-O2", "-g"]).arg(programs().join("fd_leak_check.c")).arg("-o").arg(&exe));
        let out = dir.join(format!("{name}.out"));
        let run = Command::new(&exe).env("PATHPROF_TRACE", &out).env("PATHPROF_FILE", &out).output().unwrap();
        assert!(run.status.success(), "{name}: {}", String::from_utf8_lossy(&run.stderr));
        if name == "trace" {
            let summary = trace_json(&out, &["--summary"]);
            assert_eq!(summary["threads"][0]["status"], "complete", "{summary}");
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Several runtime copies in one process: an executable and shared libraries built with the wrapper each keep
// a hidden copy of the runtime, and all of them write one trace file.

/// Builds `trace_images_main.c` with its library and plugin in `dir` with the wrapper in `mode` (`plain`:
/// clang-19 without pathprof); returns the executable.
fn build_images(dir: &Path, mode: &[&str], opt: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let cc = || match mode.first() {
        Some(&"plain") => Command::new("clang-19"),
        _ => {
            let mut w = wrapper(false);
            w.args(mode);
            w
        }
    };
    for (src, lib) in [("trace_images_lib.c", "libtraceimages.so"), ("trace_images_plugin.c", "libtraceplugin.so")] {
        run_ok(cc().args([opt, "-g", "-fPIC", "-shared"]).arg(programs().join(src)).arg("-o").arg(dir.join(lib)));
    }
    let exe = dir.join("main");
    run_ok(
        cc().args([opt, "-g", "-pthread"])
            .arg(programs().join("trace_images_main.c"))
            .arg("-L")
            .arg(dir)
            .args(["-ltraceimages", "-Wl,-rpath,$ORIGIN", "-ldl", "-o"])
            .arg(&exe),
    );
    exe
}

/// One image's stream of one thread: (image file name, status, steps).
type ImageStream = (String, String, Vec<(String, u64)>);

/// The streams of a trace file, sorted.
fn image_streams(trace: &Path) -> Vec<ImageStream> {
    let json = trace_json(trace, &[]);
    let mut out: Vec<ImageStream> = json["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let image = Path::new(t["image"].as_str().unwrap()).file_name().unwrap().to_str().unwrap().to_string();
            (image, t["status"].as_str().unwrap().to_string(), trace_steps(t))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_runtime_copy_of_a_process_writes_into_one_file_and_regenerates_exactly() {
    for opt in ["-O0", "-O2"] {
        let base = scratch(&format!("trace-images{opt}"));
        let plain = build_images(&base.join("plain"), &["plain"], opt);
        let optimal = build_images(&base.join("optimal"), &["--pathprof-mode=trace"], opt);
        let naive = build_images(&base.join("naive"), &["--pathprof-mode=trace", "--pathprof-trace-naive"], opt);
        let edge = build_images(&base.join("edge"), &["--pathprof-mode=edge"], opt);
        let run = |exe: &Path, per_process: bool| {
            let dir = exe.parent().unwrap();
            let mut cmd = Command::new(exe);
            cmd.current_dir(dir).env_remove("PATHPROF_TRACE").env_remove("PATHPROF_FILE");
            if per_process {
                cmd.env("PATHPROF_TRACE", dir.join("run-%p.pathtrace"));
            }
            let out = cmd.output().unwrap();
            (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let want = run(&plain, false);
        assert_eq!(want.0, Some(0), "{opt}: the plain build runs");
        for exe in [&optimal, &naive, &edge] {
            assert_eq!(run(exe, false), want, "{opt}: {} runs as the plain build", exe.display());
        }
        // The default name (no %p): both the executable's copy and the libraries' copies' streams are there —
        // the executable's two threads, the library's two, the plugin's one, each complete.
        let streams = image_streams(&optimal.parent().unwrap().join("default.pathtrace"));
        let images: Vec<(&str, &str)> = streams.iter().map(|s| (s.0.as_str(), s.1.as_str())).collect();
        assert_eq!(
            images,
            [
                ("libtraceimages.so", "complete"),
                ("libtraceimages.so", "complete"),
                ("libtraceplugin.so", "complete"),
                ("main", "complete"),
                ("main", "complete")
            ],
            "{opt}: one stream per image and thread"
        );
        // The second method: the naive build's per-block items, image by image and thread by thread.
        let naive_streams = image_streams(&naive.parent().unwrap().join("default.pathtrace"));
        assert_eq!(streams, naive_streams, "{opt}: regenerated streams differ from the naive trace");
        // Hand-derived: classify runs 20 + 30 + 7 times (the loop in main, the worker's apply, main's apply).
        let classify: usize = streams.iter().flat_map(|s| &s.2).filter(|(f, b)| f == "classify" && *b == 0).count();
        assert_eq!(classify, 57, "{opt}: classify's entries");
        // The counts derived from all copies' streams equal edge mode's (whose copies merge into one profile).
        let summary = trace_json(&optimal.parent().unwrap().join("default.pathtrace"), &["--summary"]);
        let ours = trace_counts(&summary);
        let theirs = edge_counts(&show_json(&edge.parent().unwrap().join("default.pathprof")));
        assert_eq!(ours.keys().collect::<Vec<_>>(), ["apply", "classify", "main", "plugin_scale", "twice", "worker"]);
        assert_eq!(ours, theirs, "{opt}: trace-derived counts differ from edge mode's");
        // With %p: one file for the process (not one per copy), holding the same streams.
        run(&optimal, true);
        let files: Vec<PathBuf> = std::fs::read_dir(optimal.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("run-"))
            .collect();
        assert_eq!(files.len(), 1, "{opt}: one trace file per process: {files:?}");
        assert_eq!(image_streams(&files[0]), streams, "{opt}: the %p file's streams");
    }
}

#[test]
fn a_process_started_while_another_writes_the_same_name_writes_its_own_file() {
    // The traced program runs a second traced process halfway through, both told to write `default.pathtrace`
    // (no %p). The running process holds the file, so the child writes `default.pathtrace.1`: neither trace is
    // cut, and each reads as a run of its own — the child's equal to the program run alone.
    let base = scratch("trace-images-other");
    let exe = build_images(&base.join("optimal"), &["--pathprof-mode=trace"], "-O1");
    let dir = exe.parent().unwrap();
    let solo = Command::new(&exe).current_dir(dir).env_remove("PATHPROF_TRACE").status().unwrap();
    assert!(solo.success());
    let alone = image_streams(&dir.join("default.pathtrace"));
    let status = Command::new(&exe)
        .current_dir(dir)
        .env_remove("PATHPROF_TRACE")
        .args(["./libtraceplugin.so", "./main"])
        .status()
        .unwrap();
    assert!(status.success());
    for name in ["default.pathtrace", "default.pathtrace.1"] {
        let out = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--json"]).arg(dir.join(name)));
        assert!(out.stderr.is_empty(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(image_streams(&dir.join("default.pathtrace.1")), alone, "the child's trace, as when run alone");
    // The parent's: the same streams but main's, which took the branch that ran the child.
    let parent = image_streams(&dir.join("default.pathtrace"));
    assert_eq!(parent.len(), alone.len());
    for (p, a) in parent.iter().zip(&alone) {
        assert_eq!(p.1, "complete");
        if p.0 != "main" {
            assert_eq!(p, a, "the parent's {} stream", p.0);
        }
    }
    assert_ne!(parent, alone, "main's stream shows the call of system()");
}

/// `--bits` JSON rows (`categories` or `entries`) by their `key` field: (count, bits).
fn count_and_bits(rows: &Value, key: &str) -> BTreeMap<String, (u64, u64)> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| (r[key].as_str().unwrap().to_string(), (r["count"].as_u64().unwrap(), r["bits"].as_u64().unwrap())))
        .collect()
}

#[test]
fn bits_breakdown_sums_to_the_streams_and_names_the_costly_entries() {
    // `pathprof trace --bits` on the three-image program: every bit read is in one category, the witnesses are
    // the conditional branches the summary counts, and the entries with a 20-bit id are the hand-derived calls
    // that cross images or go through pointers.
    let base = scratch("trace-bits");
    let exe = build_images(&base.join("optimal"), &["--pathprof-mode=trace"], "-O2");
    let dir = exe.parent().unwrap();
    assert!(Command::new(&exe).current_dir(dir).env_remove("PATHPROF_TRACE").status().unwrap().success());
    let trace = dir.join("default.pathtrace");
    let bits = trace_json(&trace, &["--bits"]);
    let summary = trace_json(&trace, &["--summary"]);
    let threads = summary["threads"].as_array().unwrap();
    let stream_bits: u64 = threads.iter().map(|t| t["bits"].as_u64().unwrap()).sum();
    let branches: u64 = threads.iter().map(|t| t["branches"].as_u64().unwrap()).sum();
    let kinds = count_and_bits(&bits["categories"], "kind");
    assert_eq!(bits["bits"].as_u64(), Some(stream_bits), "every bit of the streams is counted once");
    assert_eq!(kinds.values().map(|k| k.1).sum::<u64>(), stream_bits, "the categories sum to the total");
    assert_eq!(bits["branches"].as_u64(), Some(branches));
    // One 1-bit witness per two-way branch executed (the program has no wider branch).
    assert_eq!(kinds["witness (branch decision)"], (branches, branches));
    // apply's 37 direct calls of classify (30 in the worker, 7 in main) are fresh direct call sites.
    assert_eq!(kinds["enter at a fresh direct call site (1 bit)"], (37, 37));
    let entries = count_and_bits(&bits["entries"], "function");
    // Entries with a full id: classify from main (another image), twice through apply's pointer, plugin_scale
    // through dlsym's, apply from main's image, and the two threads' top-level functions. Each stream (an
    // image's copy in one thread) has its own entry cache, and the program has too few functions for two to
    // share a slot: a function's first entry in each stream it is entered in costs `1`, a miss flag and a
    // 20-bit id (22 bits), every later one `1`, a hit flag and a 6-bit slot (8 bits).
    let want: BTreeMap<String, (u64, u64)> = [
        // (function, entries, streams): twice and apply are entered in both threads (the worker calls apply).
        ("classify", 20, 1),
        ("twice", 37, 2),
        ("plugin_scale", 9, 1),
        ("apply", 2, 2),
        ("main", 1, 1),
        ("worker", 1, 1),
    ]
    .into_iter()
    .map(|(f, n, streams)| (f.to_string(), (n, 22 * streams + 8 * (n - streams))))
    .collect();
    assert_eq!(entries, want);
    assert_eq!(kinds["enter with a function id"], (8, 8 * 22));
    assert_eq!(kinds["enter with a cached id"], (62, 62 * 8));
    // Text: the same total on the first line.
    let text = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--bits"]).arg(&trace));
    let first = String::from_utf8_lossy(&text.stdout).lines().next().unwrap().to_string();
    assert!(first.starts_with(&format!("{stream_bits} bits, {branches} conditional branches")), "{first}");
}

/// Builds `source` in trace mode at -O0 (bits there can be derived by hand) with `PATHPROF_STATS=1` and runs it
/// once; returns the executable, its trace and the pass's statistics.
fn traced_at_o0(source: &str, name: &str) -> (PathBuf, InScratch, String) {
    let dir = scratch(&format!("trace-{name}-bits"));
    let exe = dir.join(name);
    let out = run_ok(
        wrapper(false)
            .args(["--pathprof-mode=trace", "-O0", "-g"])
            .arg(programs().join(source))
            .arg("-o")
            .arg(&exe)
            .env("PATHPROF_STATS", "1"),
    );
    let trace = dir.join(format!("{name}.pathtrace"));
    assert!(Command::new(&exe).env("PATHPROF_TRACE", &trace).status().unwrap().success());
    (exe, dir.hold(trace), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn loops_through_one_test_write_their_bits_at_the_exit_and_regenerate_exactly() {
    // The writer counts a deferred loop's iterations in a register and writes their bits at its exit: the
    // second method and edge mode agree at -O0 and -O2, with trip counts around the one-put limit (32 stays)
    // and a stream word filled mid-loop.
    optimal_equals_naive("trace_deferred.c", &[], "complete");
    check_against_edge_mode("trace_deferred.c", "complete");
    // -O0: count_up's and count_down's loops are deferred; with_call's (a call), with_branch's (an `if`) and
    // main's (calls) are not.
    let (_, trace, stats) = traced_at_o0("trace_deferred.c", "deferred");
    assert!(stats.contains(" deferred_loops=2"), "{stats}");
    // One bit per decision all the same, by hand: for each trip count t, count_up's t + 1 tests, count_down's
    // t + 1, with_branch's t + 1 and t, with_call's (m = t mod 7) m + 1 and count_up's inside it; main's 10.
    let trips = [0u64, 1, 31, 32, 33, 63, 64, 65, 200];
    let decisions: u64 = 10
        + trips
            .iter()
            .map(|&t| {
                let m = t % 7;
                3 * (t + 1) + t + (m + 1) + (0..m).map(|i| (i & 3) + 1).sum::<u64>()
            })
            .sum::<u64>();
    let bits = trace_json(&trace, &["--bits"]);
    let kinds = count_and_bits(&bits["categories"], "kind");
    assert_eq!(kinds["witness (branch decision)"], (decisions, decisions));
}

#[test]
fn implicit_calls_of_straight_line_leaves_write_nothing_and_regenerate_exactly() {
    // The second method and edge mode agree at -O0 and -O2 (the leaves' copies are inlined there).
    optimal_equals_naive("trace_leaves.c", &[], "complete");
    check_against_edge_mode("trace_leaves.c", "complete");
    // -O0, by hand: main's loop calls twice, scale and chain implicitly (no bits), hook (weak) with a 1-bit
    // announced entry; scale once more through the pointer and cmp from qsort, each with a 20-bit id.
    let (_, trace, stats) = traced_at_o0("trace_leaves.c", "leaves");
    assert!(stats.contains("implicit_calls=3 "), "three implicit call sites: {stats}");
    let summary = trace_json(&trace, &["--summary"]);
    let entries: BTreeMap<String, u64> = summary["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["function"].as_str().unwrap().to_string(), f["entries"].as_u64().unwrap()))
        .collect();
    for (f, n) in [("twice", 16), ("scale", 17), ("hook", 16), ("chain", 16), ("main", 1)] {
        assert_eq!(entries.get(f), Some(&n), "{f}'s entries: {entries:?}");
    }
    let cmp = entries["cmp"];
    assert!(cmp > 0);
    let bits = trace_json(&trace, &["--bits"]);
    let kinds = count_and_bits(&bits["categories"], "kind");
    assert_eq!(kinds["enter at a fresh direct call site (1 bit)"], (16, 16), "hook's entries only");
    // main (top level), scale (pointer) and cmp (from qsort): `1`, a miss flag and a 20-bit id the first time
    // each is entered, then (cmp) `1`, a hit flag and a 6-bit slot of the entry cache.
    assert_eq!(kinds["enter with a function id"], (3, 3 * 22));
    assert_eq!(kinds["enter with a cached id"], (cmp - 1, (cmp - 1) * 8));
    // Dones: the pointer call's, qsort's, printf's, the top level's — none for an implicit call, nor for
    // hook's direct calls (its announced entry's return ends the site).
    assert_eq!(kinds["done"].0, 1 + 1 + 1 + 1);
}

#[test]
fn certain_calls_write_nothing_and_a_foreign_entry_at_their_sites_is_abnormal() {
    // Direct calls of a static function and of a strong external one (recursive) of the executable are
    // certain: no Enter, no Done. The second method and edge mode agree at -O0 and -O2.
    optimal_equals_naive("trace_certain.c", &[], "complete");
    check_against_edge_mode("trace_certain.c", "complete");
    let (exe, trace, stats) = traced_at_o0("trace_certain.c", "certain");
    let dir = exe.parent().unwrap().to_path_buf();
    assert!(stats.contains("implicit_calls=0 certain_calls=3 "), "g, depth from main, depth from depth: {stats}");
    // -O0, by hand (n = 5): decisions — main's argc test 1, its loop test 6, g's 5, depth's 6 — one bit each;
    // entries with an id (`1`, the entry cache's miss flag, a 20-bit id): main's from the top level and hook's
    // first through the pointer (the two direct calls before it announced hook: they leave the cache alone);
    // hook's second through the pointer hits (`1`, the hit flag, a 6-bit slot); hook's two direct calls are
    // announced (`1`), and hook (no landing pad) returning there ends their sites: no Done; Dones (`0`) of the
    // two pointer calls, printf's and the top level.
    let bits = trace_json(&trace, &["--bits"]);
    let kinds = count_and_bits(&bits["categories"], "kind");
    assert_eq!(kinds["witness (branch decision)"], (18, 18));
    assert_eq!(kinds["enter with a function id"], (2, 2 * 22));
    assert_eq!(kinds["enter with a cached id"], (1, 8));
    assert_eq!(kinds["enter at a fresh direct call site (1 bit)"], (2, 2));
    assert_eq!(kinds["done"], (4, 4));
    assert_eq!(kinds["done at a fresh direct call site"], (0, 0));
    assert_eq!(bits["bits"], 18 + 44 + 8 + 2 + 4);
    let whole = trace_json(&trace, &[]);
    assert_eq!(whole["threads"][0]["status"], "complete");
    let steps = trace_steps(&whole["threads"][0]);
    let g0: Vec<usize> = (0..steps.len()).filter(|&i| steps[i] == ("g".to_string(), 0)).collect();
    assert_eq!(g0.len(), 5);

    // gdb enters g (as a signal handler could) at a certain site: at g's first instruction, before its entry
    // took the announcement (the extra g(7) takes it; g(0)'s entry then finds none), and right after g(0)
    // returned (the site's state is back, the announcement gone). Both are abnormal transfers: the trace stops
    // there, showing only blocks that ran — never g(7) taken for the site's return or for main's next blocks.
    let gdb = |commands: &[&str], name: &str| {
        let t = dir.join(name);
        let mut cmd = Command::new("gdb");
        cmd.args(["-q", "-batch", "-nx"]);
        for c in commands {
            cmd.args(["-ex", c]);
        }
        let out = cmd.arg(&exe).env("PATHPROF_TRACE", &t).output().expect("gdb runs (scripts/setup.sh installs it)");
        assert!(String::from_utf8_lossy(&out.stdout).contains("exited normally"), "{out:?}");
        let json = trace_json(&t, &[]);
        let status = json["threads"][0]["status"].as_str().unwrap().to_string();
        (status, trace_steps(&json["threads"][0]))
    };
    let (status, before) = gdb(&["break *g", "run", "delete", "print (int)g(7)", "continue"], "before.pathtrace");
    assert!(status.starts_with("incomplete: an abnormal transfer"), "{status}");
    // main up to g's first entry, which g(7) was, then g(7)'s odd branch (the one g(1) takes).
    let mut want = steps[..=g0[0]].to_vec();
    want.push(steps[g0[1] + 1].clone());
    assert_eq!(before, want);
    let (status, after) =
        gdb(&["break g", "run", "delete", "finish", "print (int)g(7)", "continue"], "after.pathtrace");
    assert!(status.starts_with("incomplete: an abnormal transfer"), "{status}");
    // main up to g(0)'s decision's target: g(0)'s return and main's next blocks came after g(7).
    assert_eq!(after, steps[..=g0[0] + 1].to_vec());
    // The same right after hook (weak: a direct call, not certain) returned from its first direct call: its
    // announced entry ended the site, so an entry there is abnormal too. Shown: up to hook's entry.
    let (status, after_hook) =
        gdb(&["break hook", "run", "delete", "finish", "print (int)hook(9)", "continue"], "hook.pathtrace");
    assert!(status.starts_with("incomplete: an abnormal transfer"), "{status}");
    let hook0 = steps.iter().position(|s| *s == ("hook".to_string(), 0)).unwrap();
    assert_eq!(after_hook, steps[..=hook0].to_vec());
}

#[test]
fn a_program_that_closes_and_reuses_the_trace_descriptor_keeps_its_output_and_the_trace() {
    // The runtime opens the trace at start-up; the program then closes every descriptor from 3 up and opens
    // its own file 8 times (taking the runtime's number). Its file must hold exactly its 8 lines, and the
    // trace — reopened by name — must be complete, with work's loop counted 3,000,000 times.
    let dir = scratch("trace-closefrom");
    let exe = dir.join("closefrom");
    run_ok(
        wrapper(false)
            .args(["--pathprof-mode=trace", "-O1", "-g"])
            .arg(programs().join("trace_closefrom.c"))
            .arg("-o")
            .arg(&exe),
    );
    let out_file = dir.join("program.out");
    let trace = dir.join("closefrom.pathtrace");
    let run = Command::new(&exe).arg(&out_file).env("PATHPROF_TRACE", &trace).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.stderr.is_empty(), "no warning: {}", String::from_utf8_lossy(&run.stderr));
    let want: String = (0..8).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), want, "the program's file holds only its own lines");
    let summary = trace_json(&trace, &["--summary"]);
    assert_eq!(summary["threads"][0]["status"], "complete");
    let work = summary["functions"].as_array().unwrap().iter().find(|f| f["function"] == "work").unwrap();
    assert_eq!(work["entries"], 1);
    let max_block = work["blocks"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).max().unwrap();
    assert_eq!(max_block, 3_000_001, "the loop test runs n + 1 times");
}

/// Bytes of executable code in object `obj` (every `.text*` section).
fn text_bytes(obj: &Path) -> u64 {
    let out = run_ok(Command::new("llvm-size-19").arg("-A").arg(obj));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(".text"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// A C (or C++, `cxx`) file whose `user` makes `calls` calls of an external function (each in a scope with a
/// destructor in C++: `invoke`s and a landing pad per call).
fn calls_source(dir: &Path, calls: usize, cxx: bool) -> PathBuf {
    let mut s = String::from(if cxx { "struct G { G(); ~G(); };\n" } else { "" });
    s += "void ext(int *);\nvoid user(void) {\n  int a[4];\n";
    for i in 0..calls {
        s += &if cxx { format!("  {{ G g; ext(a + {}); }}\n", i % 4) } else { format!("  ext(a + {});\n", i % 4) };
    }
    s += "}\n";
    let path = dir.join(format!("calls{calls}.{}", if cxx { "cpp" } else { "c" }));
    std::fs::write(&path, s).unwrap();
    path
}

#[test]
fn a_call_sites_tracing_code_is_its_common_path_only() {
    // The rare transfers' markers (abandon, unwind, resync), an entry's marker with an id and a full word's spill
    // are shared out-of-line helpers: inlined at every site they cost about 0.7 KB per call and 3.5 KB per
    // guarded call in C++, and made a real C++ test file's trace build take 12 times its plain build.
    let dir = scratch("trace-site-size");
    for (cxx, budget) in [(false, 250), (true, 800)] {
        let cc = if cxx { "clang++-19" } else { "clang-19" };
        let mut grown = Vec::new();
        for calls in [8, 40] {
            let src = calls_source(&dir, calls, cxx);
            let (plain, traced) = (dir.join("plain.o"), dir.join("traced.o"));
            run_ok(Command::new(cc).args(["-O2", "-c"]).arg(&src).arg("-o").arg(&plain));
            run_ok(wrapper(cxx).args(["--pathprof-mode=trace", "-O2", "-c"]).arg(&src).arg("-o").arg(&traced));
            grown.push(text_bytes(&traced) as i64 - text_bytes(&plain) as i64);
        }
        let per_site = (grown[1] - grown[0]) / 32;
        assert!(per_site <= budget, "cxx={cxx}: {per_site} bytes of tracing code per call site (budget {budget})");
    }
}

#[test]
fn tracing_code_at_the_entry_leaves_the_frame_static() {
    // The entry's tracing code branches; put before the entry block's allocas it would leave them in a later
    // block, where they are dynamic (the frame grows at run time and SROA keeps the variables in memory).
    let dir = scratch("trace-static-frame");
    let src = calls_source(&dir, 4, true);
    let ll = dir.join("traced.ll");
    run_ok(wrapper(true).args(["--pathprof-mode=trace", "-O0", "-S", "-emit-llvm"]).arg(&src).arg("-o").arg(&ll));
    let text = std::fs::read_to_string(&ll).unwrap();
    let body = text.split("define dso_local void @_Z4userv()").nth(1).expect("user is defined");
    let body = &body[..body.find("\n}\n").unwrap()];
    let (entry, rest) = body.split_at(body.find("\n\n").expect("user has more than one block"));
    assert!(entry.contains("alloca"), "the entry block keeps the allocas: {entry}");
    assert!(!rest.contains("alloca"), "an alloca outside the entry block:\n{body}");
}
