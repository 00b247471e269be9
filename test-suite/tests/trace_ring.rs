//! Trace mode's flight recorder (`PATHPROF_TRACE_RING`) and region tracing (`__pathprof_trace_start/stop`),
//! at -O0 and -O2, checked against the second method: naive tracing (one item per block entered) of the same
//! deterministic run. A ring's regenerated blocks must be exactly the tail of the naive full trace; a region's
//! exactly the naive trace's blocks between the two calls.

use pathprof_test_suite::*;
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// Builds `source` at `opt` as `dir/name`: `mode` "plain" (clang alone), "optimal" or "naive" (trace mode).
fn build(dir: &Path, source: &str, name: &str, mode: &str, opt: &str) -> PathBuf {
    let exe = dir.join(name);
    let mut cmd = match mode {
        "plain" => Command::new("clang-19"),
        _ => {
            let mut w = wrapper(false);
            w.arg("--pathprof-mode=trace");
            if mode == "naive" {
                w.arg("--pathprof-trace-naive");
            }
            w
        }
    };
    cmd.args([opt, "-g", "-pthread", "-I"]).arg(dist().join("include")).arg(programs().join(source));
    run_ok(cmd.arg("-o").arg(&exe));
    exe
}

/// Runs `exe args` with `env`, the trace going to `dir/out`; returns the exit status and the trace file.
fn run(exe: &Path, args: &[&str], env: &[(&str, &str)], out: &str) -> (ExitStatus, PathBuf) {
    let file = exe.parent().unwrap().join(out);
    let _ = std::fs::remove_file(&file);
    let status = Command::new(exe)
        .args(args)
        .env("PATHPROF_TRACE", &file)
        .env("PATHPROF_SIGNALS", "1")
        .envs(env.iter().copied())
        .status()
        .expect("run program");
    assert!(file.exists(), "{}: no trace written", exe.display());
    (status, file)
}

fn trace_json(trace: &Path, extra: &[&str]) -> Value {
    let out = run_ok(Command::new(dist().join("bin/pathprof")).arg("trace").arg("--json").args(extra).arg(trace));
    serde_json::from_slice(&out.stdout).expect("trace --json prints JSON")
}

/// Per thread: (status, steps as (function, block)).
fn threads(json: &Value) -> Vec<(String, Vec<(String, u64)>)> {
    json["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["status"].as_str().unwrap().to_string(), trace_steps(t)))
        .collect()
}

/// The flight recorder keeps each thread's last blocks: a ring of 4 KiB over millions of blocks, then a
/// SIGSEGV (PATHPROF_SIGNALS=1). Each thread's regenerated window is a tail of the naive full trace's same
/// thread (threads are matched by content: their numbers follow a race), and its `--last N` the last N
/// blocks; the program dies of the same signal as the plain build.
fn ring_tail_equals_naive(args: &[&str], threads_expected: usize) {
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-ring-{}{opt}", args.join("-")));
        let plain = build(&dir, "trace_ring_crash.c", "plain", "plain", opt);
        let optimal = build(&dir, "trace_ring_crash.c", "optimal", "optimal", opt);
        let naive = build(&dir, "trace_ring_crash.c", "naive", "naive", opt);
        let want = Command::new(&plain).args(args).status().unwrap();
        assert_eq!(want.signal(), Some(11), "the plain build crashes");
        let (s1, ring) = run(&optimal, args, &[("PATHPROF_TRACE_RING", "4K")], "ring.pathtrace");
        let (s2, full) = run(&naive, args, &[], "naive.pathtrace");
        assert_eq!((s1.code(), s1.signal()), (want.code(), want.signal()), "{opt}: ring run's status");
        assert_eq!((s2.code(), s2.signal()), (want.code(), want.signal()), "{opt}: naive run's status");
        // The ring file stays small: 4 KiB of bits per thread plus metadata and records.
        let size = std::fs::metadata(&ring).unwrap().len();
        assert!(size < 4096 * threads_expected as u64 + 16384, "{opt}: ring file of {size} bytes");
        let ours = threads(&trace_json(&ring, &[]));
        assert_eq!(ours.len(), threads_expected, "{opt}: threads");
        // The naive trace's last blocks per thread (the whole naive trace is millions of steps): one more than
        // the longest window, so that a window that is a whole thread shows as one.
        let longest = ours.iter().map(|(_, s)| s.len()).max().unwrap();
        let naive_json = trace_json(&full, &["--last", &(longest + 1).to_string()]);
        let theirs = threads(&naive_json);
        let totals: Vec<u64> =
            naive_json["threads"].as_array().unwrap().iter().map(|t| t["blocks"].as_u64().unwrap()).collect();
        assert_eq!(theirs.len(), threads_expected, "{opt}: naive threads");
        let mut dropped = 0;
        for (status, steps) in &ours {
            assert!(!steps.is_empty(), "{opt}: empty window ({status})");
            let tails: Vec<_> =
                theirs.iter().zip(&totals).filter(|((_, n), _)| n.len() >= steps.len() && n.ends_with(steps)).collect();
            assert_eq!(tails.len(), 1, "{opt}: a ring window is not the tail of exactly one naive thread ({status})");
            let naive_len = *tails[0].1 as usize;
            if naive_len > steps.len() {
                dropped += 1;
                assert!(status.starts_with("partial from sync point"), "{opt}: {status}");
                // About 4 KiB of bits: thousands of blocks, not the millions the thread ran.
                assert!(steps.len() > 1000 && naive_len > 1_000_000, "{opt}: {} of {naive_len}", steps.len());
            } else {
                assert!(status.starts_with("whole"), "{opt}: {status}");
            }
        }
        assert!(dropped >= 1, "{opt}: the ring never wrapped");
        // The crashing thread ends like the naive trace: in crash(), with the fatal signal.
        assert!(ours.iter().any(|(s, steps)| s.contains("fatal signal 11") && steps.last().unwrap().0 == "crash"));
        // --last N: the last N blocks of each thread.
        let last = threads(&trace_json(&ring, &["--last", "50"]));
        for ((_, all), (_, tail)) in ours.iter().zip(&last) {
            assert_eq!(tail[..], all[all.len() - 50..], "{opt}: --last 50");
        }
        // --summary says its counts are the window's, and vouches for none.
        let summary = trace_json(&ring, &["--summary"]);
        assert!(summary["window"].as_str().unwrap().contains("only the recorded windows"));
        assert!(summary["functions"].as_array().unwrap().iter().all(|f| f["exact"] == false));
        let text = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary"]).arg(&ring));
        assert!(String::from_utf8_lossy(&text.stdout).contains("\nnote: the counts cover only the recorded windows"));
    }
}

#[test]
fn ring_keeps_the_last_blocks_before_a_segv() {
    ring_tail_equals_naive(&[], 1);
}

#[test]
fn ring_keeps_each_threads_last_blocks() {
    ring_tail_equals_naive(&["threads"], 4);
}

/// Regions: with PATHPROF_TRACE_REGION=1 each thread is traced only between its own start and stop. The
/// regenerated region equals the naive region of the same run; and the naive region is, in the naive run that
/// traces threads from their start (no PATHPROF_TRACE_REGION), exactly the blocks after the one whose call
/// started it, up to the stop.
#[test]
fn region_regenerates_exactly_the_blocks_between_start_and_stop() {
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("trace-region{opt}"));
        let plain = build(&dir, "trace_region.c", "plain", "plain", opt);
        let optimal = build(&dir, "trace_region.c", "optimal", "optimal", opt);
        let naive = build(&dir, "trace_region.c", "naive", "naive", opt);
        let want = Command::new(&plain).status().unwrap();
        let region = [("PATHPROF_TRACE_REGION", "1")];
        let (s1, ours) = run(&optimal, &[], &region, "region.pathtrace");
        let (s2, theirs) = run(&naive, &[], &region, "naive-region.pathtrace");
        let (s3, whole) = run(&naive, &[], &[], "naive-whole.pathtrace");
        for s in [s1, s2, s3] {
            assert_eq!(s.code(), want.code(), "{opt}: exit status");
        }
        let mut ours = threads(&trace_json(&ours, &[]));
        let mut theirs = threads(&trace_json(&theirs, &[]));
        let whole = threads(&trace_json(&whole, &[]));
        assert_eq!(ours.len(), 2, "{opt}: main and the worker each traced a region");
        ours.sort_by(|a, b| a.1.cmp(&b.1));
        theirs.sort_by(|a, b| a.1.cmp(&b.1));
        for ((status, steps), (nstatus, nsteps)) in ours.iter().zip(&theirs) {
            assert!(status.starts_with("region from bit ") && status.contains("region stopped"), "{opt}: {status}");
            assert!(nstatus.contains("region stopped"), "{opt}: {nstatus}");
            assert_eq!(steps, nsteps, "{opt}: the regenerated region differs from the naive region");
            // Whole naive traces stop at the same stop() (threads start traced, start() is then a no-op): the
            // region is their tail, right after the block whose call started it.
            let w = whole.iter().find(|(_, n)| n.ends_with(steps)).expect("the region is a tail of a whole trace");
            let before = &w.1[w.1.len() - steps.len() - 1];
            assert!(
                ["pathprof_trace_start_if_linked", "enter_region", "worker", "section"].contains(&before.0.as_str()),
                "{opt}: the block before the region is {before:?}"
            );
            assert!(w.1.len() > steps.len() + 10, "{opt}: the region is only part of the thread");
        }
        // Main's region, derived by hand from the source: fib(6) (25 activations) and fib(3) through a pointer (5)
        // in enter_region, two frames deep, then section's loop: fib(i + 3) (2 fib(i + 4) - 1 activations) when s is odd, else churn.
        let main_region = ours.iter().find(|(_, s)| s.iter().any(|(f, _)| f == "section")).expect("main's region");
        let entries = |name: &str| main_region.1.iter().filter(|(f, b)| f == name && *b == 0).count();
        let (fibs, churns) = expected_main_region();
        assert_eq!((entries("fib"), entries("churn")), (fibs, churns), "{opt}: activations in main's region");
    }
}

fn fib(n: u32) -> u32 {
    if n < 2 {
        n
    } else {
        fib(n - 1).wrapping_add(fib(n - 2))
    }
}

fn churn(mut x: u32, n: u32) -> u32 {
    for _ in 0..n {
        x = if x & 1 != 0 { x.wrapping_mul(3).wrapping_add(1) } else { x / 2 };
    }
    x
}

/// trace_region.c's main region, computed again: (fib activations, churn activations) between start and stop.
fn expected_main_region() -> (usize, usize) {
    let calls = |n: u32| 2 * fib(n + 1) as usize - 1;
    let mut w = churn(5, 100).wrapping_add(fib(10));
    w = w.wrapping_add(fib(5).wrapping_add(churn(w, 3)));
    w = w.wrapping_add(fib(12));
    let mut s = fib(15).wrapping_add(churn(7, 50)).wrapping_add(fib(4)).wrapping_add(fib(4)).wrapping_add(w);
    s = s.wrapping_add(churn(s, 5));
    s = s.wrapping_add(fib(6));
    s = s.wrapping_add(fib(3)); // through the pointer
    let (mut fibs, mut churns) = (calls(6) + calls(3), 0);
    for i in 0..4 {
        if s & 1 != 0 {
            s = s.wrapping_add(fib(i + 3));
            fibs += calls(i + 3);
        } else {
            s = s.wrapping_add(churn(s, i));
            churns += 1;
        }
    }
    (fibs, churns)
}

/// A ring trace cut short (a crash while writing, a partial copy) reads up to the cut with one warning: the
/// window's thread is incomplete (its end record is gone), and holds no more blocks than the whole file's.
/// A file cut inside its header is one error line and exit 2.
#[test]
fn truncated_ring_trace_reads_up_to_the_cut_with_a_warning() {
    let dir = scratch("trace-ring-bad");
    let exe = build(&dir, "trace_ring_crash.c", "optimal", "optimal", "-O0");
    let (_, ring) = run(&exe, &[], &[("PATHPROF_TRACE_RING", "4K")], "ring.pathtrace");
    let bytes = std::fs::read(&ring).unwrap();
    let blocks = |f: &std::path::Path| {
        let out =
            Command::new(dist().join("bin/pathprof")).args(["trace", "--summary", "--json"]).arg(f).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), out.stdout)
    };
    let (code, _, whole) = blocks(&ring);
    assert_eq!(code, Some(0));
    let whole: serde_json::Value = serde_json::from_slice(&whole).unwrap();
    let all = whole["threads"][0]["blocks"].as_u64().unwrap();
    for cut in [bytes.len() - 40, bytes.len() - 3000, bytes.len() / 2] {
        let f = dir.join(format!("cut{cut}"));
        std::fs::write(&f, &bytes[..cut]).unwrap();
        let (code, err, out) = blocks(&f);
        assert_eq!(code, Some(0), "cut at {cut}: {err}");
        assert_eq!(err.lines().count(), 1, "cut at {cut}: {err}");
        assert!(err.contains("ends inside a record"), "cut at {cut}: {err}");
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let t = &json["threads"][0];
        assert!(t["status"].as_str().unwrap().contains("incomplete: records are missing"), "cut at {cut}: {t}");
        assert!(t["blocks"].as_u64().unwrap() <= all, "cut at {cut}: {t}");
    }
    let f = dir.join("cut-header");
    std::fs::write(&f, &bytes[..20]).unwrap();
    let (code, err, _) = blocks(&f);
    assert_eq!((code, err.lines().count()), (Some(2), 1), "{err}");
    // A file of the previous layout version is refused in one line.
    let mut old = bytes.clone();
    old[4] = 3;
    let f = dir.join("v3");
    std::fs::write(&f, &old).unwrap();
    let out = Command::new(dist().join("bin/pathprof")).arg("trace").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("layout version 3"));
}

/// Signal handlers under a flight recorder and in region mode (trace_handlers.c, its last handler leaving
/// through `siglongjmp`): each handler stream gets a ring of its own, large enough here to keep every stream
/// whole — each equal, block for block, to the naive trace's stream of the same thread or handlers — and in
/// region mode, where no region is started, every stream (handler streams start stopped, like threads) holds
/// nothing and none is called abnormal, although the landing ended two of them.
#[test]
fn handler_streams_get_rings_of_their_own_and_start_stopped_in_region_mode() {
    for opt in ["-O0", "-O2"] {
        let dir = scratch(&format!("ring-handlers{opt}"));
        let optimal = build(&dir, "trace_handlers.c", "optimal", "optimal", opt);
        let naive = build(&dir, "trace_handlers.c", "naive", "naive", opt);
        let (s1, ring) = run(&optimal, &[], &[("PATHPROF_TRACE_RING", "1M")], "ring.pathtrace");
        let (s2, whole) = run(&naive, &[], &[], "naive.pathtrace");
        assert!(s1.success() && s2.success(), "{opt}");
        let (mut ring, mut whole) = (threads(&trace_json(&ring, &[])), threads(&trace_json(&whole, &[])));
        ring.sort_by(|a, b| a.1.cmp(&b.1));
        whole.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(ring.len(), 3, "{opt}: main's stream, its handlers', the nested handler's");
        for ((status, steps), (_, want)) in ring.iter().zip(&whole) {
            assert!(status.starts_with("whole (the flight recorder's ring kept"), "{opt}: {status}");
            assert_eq!(steps, want, "{opt}");
        }
        let (s3, region) = run(&optimal, &["escape"], &[("PATHPROF_TRACE_REGION", "1")], "region.pathtrace");
        assert!(s3.success(), "{opt}");
        for (status, steps) in threads(&trace_json(&region, &[])) {
            assert!(steps.is_empty() && status.starts_with("cut short"), "{opt}: {status}");
        }
    }
}
