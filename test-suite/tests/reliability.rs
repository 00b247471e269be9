//! Reliability: abnormal ends (fatal signals with and without the `PATHPROF_SIGNALS=1` flush, `std::terminate`,
//! `_exit`), long-running programs (explicit dumps and resets, `PATHPROF_DUMP_INTERVAL`), threads (atomic
//! exactness under 8 threads, flagged non-atomic runs, threads alive at exit), processes (fork + exec, vfork,
//! posix_spawn), the CLI on every fuzz-corpus file, and the pass on sqlite3.c at every -O level (ignored by
//! default: slow).
//!
//! Programs: `test-suite/programs/reliability/`, with hand-derived `// expect: N` markers and comments giving
//! the derivation of every other number checked here.

use pathprof_format::symbols;
use pathprof_test_suite::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

const RECORD_FLAG_INCOMPLETE: u64 = 1;
const RECORD_FLAG_THREADED_NONATOMIC: u64 = 2;
const RECORD_FLAG_THREADS_IN_FLIGHT: u64 = 8;

fn src(name: &str) -> PathBuf {
    programs().join("reliability").join(name)
}

/// Compiles `sources` (from the reliability directory) into `dir/name` with the wrapper.
/// `mode` is a pathprof mode, or `path+sparse` / `path+hashed` / `path+table`: path mode with every function of
/// more than one path in a sparse region / a hash table (behind its cache) / a hash table without a cache.
fn build(dir: &Path, name: &str, sources: &[&str], opt: &str, mode: &str, atomic: bool) -> PathBuf {
    let cxx = sources.iter().any(|s| s.ends_with(".cpp"));
    let exe = dir.join(name);
    let mut cc = wrapper(cxx);
    let (mode, storage) = mode.split_once('+').unwrap_or((mode, ""));
    match storage {
        "sparse" => cc.env("PATHPROF_PATH_ARRAY_MAX", "1"),
        "hashed" => cc.env("PATHPROF_PATH_ARRAY_MAX", "1").env("PATHPROF_PATH_SPARSE_MAX", "1"),
        "table" => {
            cc.env("PATHPROF_PATH_ARRAY_MAX", "1").env("PATHPROF_PATH_SPARSE_MAX", "1").env("PATHPROF_PATH_CACHE", "0")
        }
        _ => &mut cc,
    };
    cc.arg(opt).arg(format!("--pathprof-mode={mode}")).arg("-I").arg(dist().join("include")).arg("-pthread");
    if atomic {
        cc.arg("--pathprof-atomic");
    }
    cc.args(sources.iter().map(|s| src(s))).arg("-o").arg(&exe);
    run_ok(&mut cc);
    exe
}

/// The program under `sh -c 'ulimit -c 0; exec ...'` (no core files; `exec` keeps the pid, so signals sent to
/// the child reach the program), in `dir`, writing `profile`, with no pathprof run-time variable inherited.
fn program(exe: &Path, args: &[&str], dir: &Path, profile: &Path) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg("ulimit -c 0; exec \"$0\" \"$@\"").arg(exe).args(args).current_dir(dir);
    c.env("PATHPROF_FILE", profile);
    for v in [
        "PATHPROF_SIGNALS",
        "PATHPROF_DUMP_INTERVAL",
        "PATHPROF_VERBOSE",
        "PATHPROF_TABLE_CAP_LOG2",
        "PATHPROF_EXIT_WAIT",
    ] {
        c.env_remove(v);
    }
    c.stdin(Stdio::null());
    c
}

/// Waits for `child` at most `secs` seconds (a deadlock fails the test, after killing it), collecting its
/// output meanwhile (a full pipe must never stall it).
fn wait_within(child: Child, secs: u64, what: &str) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => out.expect("wait_with_output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-KILL").arg(pid.to_string()).status();
            panic!("{what}: did not finish within {secs} s (deadlock?)");
        }
    }
}

fn output_within(mut cmd: Command, secs: u64, what: &str) -> Output {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    wait_within(child, secs, what)
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// How a program ended: `Ok(code)` or `Err(signal)`.
fn ending(s: ExitStatus) -> Result<i32, i32> {
    match (s.code(), s.signal()) {
        (Some(c), _) => Ok(c),
        (None, Some(sig)) => Err(sig),
        _ => panic!("neither exit code nor signal: {s:?}"),
    }
}

/// Every record's (flags, runs), read from the file layout (format/src/layout.rs): header 40 bytes with
/// `num_modules` at 16; each record starts with `record_len`, and has `flags` at 40 and `runs` at 48.
fn records(profile: &Path) -> Vec<(u64, u64)> {
    let b = std::fs::read(profile).unwrap_or_else(|e| panic!("{}: {e}", profile.display()));
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let n = u32::from_le_bytes(b[16..20].try_into().unwrap());
    let mut at = 40;
    let mut out = Vec::new();
    for _ in 0..n {
        out.push((u64_at(at + 40), u64_at(at + 48)));
        at += u64_at(at) as usize;
    }
    assert_eq!(at, b.len(), "{}: records do not end at the end of the file", profile.display());
    out
}

fn functions(show: &Value) -> &Vec<Value> {
    show["functions"].as_array().expect("functions")
}

fn function<'a>(show: &'a Value, name: &str) -> &'a Value {
    functions(show).iter().find(|f| f["name"] == name).unwrap_or_else(|| panic!("no function {name}"))
}

fn has_reason(f: &Value, words: &str) -> bool {
    f["inexact_reasons"].as_array().expect("reasons").iter().any(|r| r.as_str().unwrap_or("").contains(words))
}

/// The wording of `InexactReason::Incomplete` and `ThreadedNonatomic` in `pathprof show`.
const INCOMPLETE_REASON: &str = "ended abnormally, counts are a lower bound";
const THREADED_REASON: &str = "updated non-atomically by several threads";

/// A profile written by a fatal-signal flush: every record flagged incomplete, every function `exact: false`
/// with the incomplete reason; and `work()`, whose 100 calls all completed, has its exact counts.
fn assert_incomplete_profile(profile: &Path, source: &Path, what: &str) {
    let recs = records(profile);
    assert!(!recs.is_empty(), "{what}");
    assert!(recs.iter().all(|(f, _)| f & RECORD_FLAG_INCOMPLETE != 0), "{what}: {recs:?}");
    let show = show_json(profile);
    for f in functions(&show) {
        assert_eq!(f["exact"], false, "{what}: {}", f["name"]);
        assert!(has_reason(f, INCOMPLETE_REASON), "{what}: {}: {}", f["name"], f["inexact_reasons"]);
    }
    assert_eq!(function(&show, "work")["entry_count"], 100, "{what}");
    assert_markers(&show, source);
}

/// Reads the program's stdout until its "ready" line.
fn wait_ready(child: &mut Child, what: &str) {
    let out = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).expect("read stdout");
    assert_eq!(line, "ready\n", "{what}");
}

/// `kill -TERM pid` from another process.
fn sigterm(child: &Child) {
    run_ok(Command::new("kill").arg("-TERM").arg(child.id().to_string()));
}

/// Runs crash.c in `how` and returns how it ended (`term*` modes get SIGTERM from `kill` once ready).
fn run_crash(exe: &Path, how: &str, dir: &Path, profile: &Path, opt_in: bool) -> Output {
    let mut cmd = program(exe, &[how], dir, profile);
    if opt_in {
        cmd.env("PATHPROF_SIGNALS", "1");
    }
    let what = format!("crash {how} (opt-in {opt_in})");
    if how.starts_with("term") {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
        wait_ready(&mut child, &what);
        std::thread::sleep(Duration::from_millis(50));
        sigterm(&child);
        wait_within(child, 30, &what)
    } else {
        output_within(cmd, 30, &what)
    }
}

/// Each fault, in edge mode at -O0 and path mode at -O2, with `PATHPROF_SIGNALS=1`: the program ends exactly
/// as without pathprof (same signal), the profile exists, every record is flagged incomplete, `show --json`
/// marks every function `"exact": false` with the incomplete reason, and work()'s completed calls are exact.
/// Without the opt-in: the same ending and no profile (except where the program itself dumped).
#[test]
fn fatal_signals_flush_an_incomplete_profile_only_with_the_opt_in() {
    let faults: [(&str, i32, bool); 9] = [
        ("segv", 11, false),
        // Stack overflow, handled on the thread's alternate signal stack (SA_ONSTACK).
        ("overflow", 11, false),
        ("abort", 6, false),
        ("bus", 7, false),
        ("ill", 4, false),
        ("fpe", 8, false),
        ("term", 15, false),
        // SIGTERM while the main thread dumps in a loop: the flush waits for no dump of its own thread.
        ("term-dumping", 15, true),
        // SIGSEGV in main while another thread dumps in a loop.
        ("segv-dumping", 11, true),
    ];
    for (mode, opt) in [("edge", "-O0"), ("path", "-O2")] {
        let dir = scratch(&format!("signals-{mode}"));
        let exe = build(&dir, "crash", &["crash.c"], opt, mode, false);
        for (how, sig, dumps_itself) in faults {
            let what = format!("{mode} {opt} {how}");
            let prof = dir.join(format!("{how}-on.pathprof"));
            let out = run_crash(&exe, how, &dir, &prof, true);
            assert_eq!(ending(out.status), Err(sig), "{what} with opt-in: {}", describe(&out));
            assert!(prof.exists(), "{what}: no profile with PATHPROF_SIGNALS=1: {}", describe(&out));
            assert_incomplete_profile(&prof, &src("crash.c"), &what);
            assert!(!String::from_utf8_lossy(&out.stderr).contains("pathprof:"), "{what}: {}", describe(&out));

            let prof = dir.join(format!("{how}-off.pathprof"));
            let out = run_crash(&exe, how, &dir, &prof, false);
            assert_eq!(ending(out.status), Err(sig), "{what} without opt-in: {}", describe(&out));
            if dumps_itself {
                // Only the program's own __pathprof_dump() calls wrote it: nothing is flagged incomplete.
                assert!(records(&prof).iter().all(|(f, _)| f & RECORD_FLAG_INCOMPLETE == 0), "{what}");
            } else {
                assert!(!prof.exists(), "{what}: a profile was written without PATHPROF_SIGNALS");
            }
        }
        // The opt-in changes nothing for a normal exit: exact, unflagged, status kept.
        let prof = dir.join("exit.pathprof");
        let out = run_crash(&exe, "exit", &dir, &prof, true);
        assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
        assert_eq!(records(&prof), vec![(0, 1)]);
        let show = show_json(&prof);
        assert!(functions(&show).iter().all(|f| f["exact"] == true), "{show}");
        assert_markers(&show, &src("crash.c"));
        // _exit() runs no exit handlers, but the runtime writes right before the call what exit() would:
        // exact, unflagged, with or without the opt-in; status kept.
        for opt_in in [true, false] {
            let prof = dir.join(format!("_exit-{opt_in}.pathprof"));
            let out = run_crash(&exe, "_exit", &dir, &prof, opt_in);
            assert_eq!(ending(out.status), Ok(7), "{}", describe(&out));
            assert_eq!(records(&prof), vec![(0, 1)], "_exit (opt-in {opt_in})");
            let show = show_json(&prof);
            assert!(functions(&show).iter().all(|f| f["exact"] == true), "{show}");
            assert_markers(&show, &src("crash.c"));
        }
    }
}

/// C++: `std::terminate()` and an uncaught exception end in SIGABRT; with the opt-in the profile is flushed
/// incomplete, without it there is none.
#[test]
fn cxx_terminate_flushes_only_with_the_opt_in() {
    let dir = scratch("terminate");
    let exe = build(&dir, "terminate", &["terminate.cpp"], "-O1", "path", false);
    for how in ["terminate", "throw"] {
        for opt_in in [true, false] {
            let prof = dir.join(format!("{how}-{opt_in}.pathprof"));
            let mut cmd = program(&exe, &[how], &dir, &prof);
            if opt_in {
                cmd.env("PATHPROF_SIGNALS", "1");
            }
            let out = output_within(cmd, 30, how);
            assert_eq!(ending(out.status), Err(6), "{how} opt-in {opt_in}: {}", describe(&out));
            if opt_in {
                assert_incomplete_profile(&prof, &src("terminate.cpp"), how);
            } else {
                assert!(!prof.exists(), "{how}: profile written without the opt-in");
            }
        }
    }
}

/// With the profile's lock held by another process, the flush does not wait: it writes this run's records to
/// `FILE.<pid>.incomplete` with one warning line, and the program still dies of its signal.
#[test]
fn fatal_flush_never_waits_for_another_process_lock() {
    let dir = scratch("signal-lock");
    let exe = build(&dir, "crash", &["crash.c"], "-O1", "edge", false);
    let prof = dir.join("locked.pathprof");
    // `exec 9>FILE.lock; flock 9; echo locked; exec sleep 60`: one process (sh, then sleep) holds the lock.
    let mut holder = Command::new("sh")
        .arg("-c")
        .arg("exec 9>\"$0.lock\"; flock 9 || exit 1; echo locked; exec sleep 60")
        .arg(&prof)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn lock holder");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    if line != "locked\n" {
        let _ = holder.kill();
        let _ = holder.wait();
        eprintln!("skipping: flock(1) is not available");
        return;
    }
    let out = run_crash(&exe, "abort", &dir, &prof, true);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(ending(out.status), Err(6), "{}", describe(&out));
    assert!(!prof.exists(), "the flush waited for the lock");
    let pid = out.stderr.clone();
    let err = String::from_utf8_lossy(&pid);
    let alone: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".incomplete"))
        .collect();
    assert_eq!(alone.len(), 1, "{alone:?}");
    let want = format!(
        "pathprof: warning: fatal signal 6: {} is locked by another process; wrote this run's incomplete counts to {}\n",
        prof.display(),
        alone[0].display()
    );
    assert!(err.ends_with(&want) && err.lines().filter(|l| l.starts_with("pathprof:")).count() == 1, "{err}");
    assert_incomplete_profile(&alone[0], &src("crash.c"), "FILE.<pid>.incomplete");
}

/// A process that holds the profile's lock records its pid in `FILE.lock`. A writer that finds the lock held
/// waits while the holder runs and merges once it is released; when the holder is stopped (`SIGSTOP`: a shell's
/// job control, which may wait for this very writer before it continues the holder) it does not wait forever
/// but writes its exact counts apart, to `FILE.<pid>.incomplete`, silently and with its exit status unchanged.
#[test]
fn a_stopped_lock_holder_never_blocks_a_write() {
    let dir = scratch("stopped-holder");
    let exe = build(&dir, "crash", &["crash.c"], "-O1", "edge", false);
    let prof = dir.join("held.pathprof");
    let out = output_within(program(&exe, &["exit"], &dir, &prof), 30, "first run");
    assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
    let lock_text = std::fs::read_to_string(dir.join("held.pathprof.lock")).unwrap();
    assert!(lock_text.trim().parse::<u32>().is_ok_and(|p| p > 1), "lock file names its last holder: {lock_text:?}");

    // sh holds the lock, writes its pid as the runtime does, says so, and then sleeps (running) or stops.
    let hold = |then: &str| {
        let script = format!("exec 9<>\"$0.lock\"; flock 9 || exit 1; printf '%-11s\\n' $$ >&9; echo locked; {then}");
        let mut holder =
            Command::new("sh").arg("-c").arg(script).arg(&prof).stdout(Stdio::piped()).spawn().expect("spawn holder");
        let mut line = String::new();
        BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
        (holder, line == "locked\n")
    };

    // Running: the write waits for the holder's release, then merges into FILE.
    let (mut holder, locked) = hold("sleep 1");
    if !locked {
        let _ = holder.kill();
        let _ = holder.wait();
        eprintln!("skipping: flock(1) is not available");
        return;
    }
    let started = Instant::now();
    let out = output_within(program(&exe, &["exit"], &dir, &prof), 30, "run behind a running holder");
    let _ = holder.wait();
    assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
    assert!(started.elapsed() >= Duration::from_millis(500), "the write did not wait for the lock");
    assert!(files_apart(&prof).is_empty(), "written apart behind a running holder");
    assert_eq!(function(&show_json(&prof), "work")["entry_count"], 200, "both runs merged");

    // Stopped: the write goes apart at once, exact.
    let (mut holder, _) = hold("kill -STOP $$; sleep 60");
    let out = output_within(program(&exe, &["exit"], &dir, &prof), 30, "run behind a stopped holder");
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
    assert!(out.stderr.is_empty(), "{}", describe(&out));
    let apart = files_apart(&prof);
    assert_eq!(apart.len(), 1, "{apart:?}");
    let show = show_json(&apart[0]);
    assert!(functions(&show).iter().all(|f| f["exact"] == true), "{show}");
    assert_eq!(function(&show, "work")["entry_count"], 100);
    assert_eq!(function(&show_json(&prof), "work")["entry_count"], 200, "FILE unchanged");
}

/// server.c: `__pathprof_reset()` after the warm-up, then a `__pathprof_dump()` after every 400 requests. Each
/// kept snapshot n holds exactly the work done so far: handle() entered 400 n times, 100 n of them with
/// `req % 4 == 0` (requests 0..400n-1), 300 n without; the warm-up never appears. A single-threaded run of a
/// non-atomic build is not flagged. (main's own counts are cut by the reset inside its activation: it is
/// reported inexact, as it should be.)
#[test]
fn explicit_dumps_are_consistent_snapshots_and_reset_discards_warmup() {
    for (mode, opt) in [("edge", "-O0"), ("path", "-O2"), ("path+sparse", "-O2"), ("path+hashed", "-O2")] {
        let dir = scratch(&format!("server-{mode}"));
        let exe = build(&dir, "server", &["server.c"], opt, mode, false);
        let prof = dir.join("server.pathprof");
        let out = output_within(program(&exe, &[], &dir, &prof), 60, "server");
        assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
        let source = src("server.c");
        let text = std::fs::read_to_string(&source).unwrap();
        let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() as u32 + 1;
        let (taken, other) = (line_of("sink += req;"), line_of("sink -= 1;"));
        for n in 1..=10u64 {
            let snap = dir.join(format!("snap-{n}.pathprof"));
            assert_eq!(records(&snap), vec![(0, 1)], "{mode} snapshot {n}");
            let show = show_json(&snap);
            let h = function(&show, "handle");
            assert_eq!(h["exact"], true, "{mode} snapshot {n}: {}", h["inexact_reasons"]);
            assert_eq!(h["entry_count"], 400 * n, "{mode} snapshot {n}");
            let counts = marker_counts(&show, &source);
            assert_eq!((counts[&taken], counts[&other]), (Some(100 * n), Some(300 * n)), "{mode} snapshot {n}");
        }
        let show = show_json(&prof);
        assert_markers(&show, &source);
        assert_eq!(function(&show, "handle")["exact"], true);
        assert_eq!(function(&show, "handle")["entry_count"], 4000);
        // main's activation spans the reset, which discarded its entry: flagged, never a wrong number.
        assert_eq!(function(&show, "main")["exact"], false);
        assert_eq!(records(&prof), vec![(0, 1)]);
    }
}

/// `PATHPROF_DUMP_INTERVAL=0.2`: the profile appears and is valid while the program still runs (it blocks on
/// stdin after 1000 requests: 250 with `req % 4 == 0`), and at exit holds all 1500 (375 + 1125). Atomic build:
/// exact. Non-atomic build: the timer thread makes the process multi-threaded, so the record is flagged.
#[test]
fn dump_interval_writes_the_profile_while_the_program_runs() {
    for atomic in [true, false] {
        let dir = scratch(&format!("interval-{atomic}"));
        let exe = build(&dir, "sleeper", &["sleeper.c"], "-O1", "path", atomic);
        let prof = dir.join("live.pathprof");
        let mut cmd = program(&exe, &[], &dir, &prof);
        cmd.env("PATHPROF_DUMP_INTERVAL", "0.2").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn sleeper");
        wait_ready(&mut child, "sleeper");
        let start = Instant::now();
        let mut seen = None;
        while start.elapsed() < Duration::from_secs(20) {
            if prof.exists() {
                // Whatever moment we look, the file is a complete profile (written to a temporary name, renamed).
                let show = show_json(&prof);
                if function(&show, "handle")["entry_count"] == 1000 {
                    seen = Some(show);
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let show = seen.expect("no profile with 1000 handled requests within 20 s while the program runs");
        assert!(child.try_wait().unwrap().is_none(), "the program ended before the check");
        let source = src("sleeper.c");
        let text = std::fs::read_to_string(&source).unwrap();
        let taken = text.lines().position(|l| l.contains("sink += req;")).unwrap() as u32 + 1;
        assert_eq!(marker_counts(&show, &source)[&taken], Some(250));
        drop(child.stdin.take());
        let out = wait_within(child, 30, "sleeper");
        assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
        let show = show_json(&prof);
        assert_markers(&show, &source);
        let h = function(&show, "handle");
        if atomic {
            assert_eq!(h["exact"], true, "{}", h["inexact_reasons"]);
            assert_eq!(records(&prof), vec![(0, 1)]);
        } else {
            assert!(has_reason(h, THREADED_REASON), "{h}");
            assert_eq!(records(&prof), vec![(RECORD_FLAG_THREADED_NONATOMIC, 1)]);
        }
    }
}

/// stress.c, 8 threads with --pathprof-atomic, edge and path mode: every hand-derived count exact (classify
/// 2,000,000 calls split 666,672 / 666,664 / 666,664; spin's inner loop 3,000,000 iterations).
#[test]
fn eight_threads_atomic_counts_are_exact() {
    for (mode, opt) in [("edge", "-O2"), ("path", "-O2"), ("path", "-O0")] {
        let dir = scratch(&format!("stress-atomic-{mode}{opt}"));
        let exe = build(&dir, "stress", &["stress.c"], opt, mode, true);
        let prof = dir.join("stress.pathprof");
        let out = output_within(program(&exe, &[], &dir, &prof), 120, "stress");
        assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
        let show = show_json(&prof);
        assert_markers(&show, &src("stress.c"));
        assert!(functions(&show).iter().all(|f| f["exact"] == true), "{mode}{opt}: {show}");
        assert_eq!(function(&show, "classify")["entry_count"], 2_000_000);
        assert_eq!(function(&show, "spin")["entry_count"], 2_000_000);
        assert_eq!(function(&show, "run")["entry_count"], 8);
        assert_eq!(records(&prof), vec![(0, 1)]);
    }
}

/// True if any number in the JSON is negative (counts, ids, lines: none may be).
fn any_negative(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_i64().is_some_and(|x| x < 0) || n.as_f64().is_some_and(|x| x < 0.0),
        Value::Array(a) => a.iter().any(any_negative),
        Value::Object(o) => o.values().any(any_negative),
        _ => false,
    }
}

/// stress.c without --pathprof-atomic: increments may be lost, so the record is flagged THREADED_NONATOMIC,
/// every function is `exact: false` with that reason, and neither `show` nor `decode` (text or JSON) prints a
/// negative count.
#[test]
fn eight_threads_nonatomic_are_flagged_and_never_negative() {
    for mode in ["edge", "path"] {
        let dir = scratch(&format!("stress-plain-{mode}"));
        let exe = build(&dir, "stress", &["stress.c"], "-O2", mode, false);
        let prof = dir.join("stress.pathprof");
        let out = output_within(program(&exe, &[], &dir, &prof), 120, "stress");
        assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
        assert_eq!(records(&prof), vec![(RECORD_FLAG_THREADED_NONATOMIC, 1)]);
        let show = show_json(&prof);
        for f in functions(&show) {
            assert_eq!(f["exact"], false, "{}", f["name"]);
            assert!(has_reason(f, THREADED_REASON), "{f}");
        }
        assert!(!any_negative(&show), "negative count in show --json");
        let cli = dist().join("bin/pathprof");
        let text = run_ok(Command::new(&cli).arg("show").arg(&prof)).stdout;
        let text = String::from_utf8_lossy(&text);
        assert!(!text.contains("count -") && !text.contains("count: -"), "{text}");
        if mode == "path" {
            let json = run_ok(Command::new(&cli).args(["decode", "--json"]).arg(&prof)).stdout;
            let json: Value = serde_json::from_slice(&json).unwrap();
            assert!(!any_negative(&json), "negative count in decode --json");
            let text = run_ok(Command::new(&cli).arg("decode").arg(&prof)).stdout;
            let text = String::from_utf8_lossy(&text);
            assert!(!text.contains("count -"), "{text}");
        }
    }
}

/// openmp_pool.c: an OpenMP program that returns right after its parallel loop, while libomp's workers spin
/// (200 ms, `KMP_BLOCKTIME`) in the runtime's own code before they sleep. The dump at the end waits for them
/// to fall asleep: one exact run merged into the profile, counts as the program says (before, every run was
/// written apart, flagged: the workers were running). Every counting mode, -O0 and -O2, atomic counters.
#[test]
fn openmp_workers_idling_at_exit_leave_an_exact_profile() {
    let dir = scratch("openmp");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        for opt in ["-O0", "-O2"] {
            let name = format!("{mode}{opt}");
            let exe = dir.join(&name);
            run_ok(
                wrapper(false)
                    .arg(opt)
                    .arg(format!("--pathprof-mode={mode}"))
                    .args(["--pathprof-atomic", "-fopenmp"])
                    .arg(src("openmp_pool.c"))
                    .arg("-o")
                    .arg(&exe),
            );
            let profile = dir.join(format!("{name}.pathprof"));
            let out = output_within(program(&exe, &[], &dir, &profile), 60, "openmp_pool");
            assert_eq!(ending(out.status), Ok(0), "{name}: {}", describe(&out));
            assert_eq!(String::from_utf8_lossy(&out.stdout), "426\n", "{name}");
            assert!(out.stderr.is_empty(), "{name}: {}", describe(&out));
            assert!(files_apart(&profile).is_empty(), "{name}: written apart");
            assert_eq!(records(&profile), vec![(0, 1)], "{name}");
            let show = show_json(&profile);
            assert!(functions(&show).iter().all(|f| f["exact"] == true), "{name}: {show}");
            let entries = entry_counts(&show);
            assert_eq!(entries["main"], Some(1), "{name}");
            assert_eq!(entries["work"], Some(1000), "{name}");
        }
    }
}

/// stress.c "leave": main returns (status 3) while 8 threads keep incrementing; the exit dump neither crashes
/// nor changes the status. Each run's records are flagged — non-atomic updates by several threads, and threads
/// running when the process ended — and written apart, one file per run, so nothing is merged into the profile.
#[test]
fn threads_running_at_exit_do_not_break_the_dump() {
    let dir = scratch("stress-leave");
    let exe = build(&dir, "stress", &["stress.c"], "-O2", "path", false);
    let prof = dir.join("leave.pathprof");
    for _ in 0..3 {
        let out = output_within(program(&exe, &["leave"], &dir, &prof), 60, "stress leave");
        assert_eq!(ending(out.status), Ok(3), "{}", describe(&out));
        assert!(out.stderr.is_empty(), "{}", describe(&out));
    }
    assert!(!prof.exists());
    let apart = files_apart(&prof);
    assert_eq!(apart.len(), 3, "{apart:?}");
    for run in &apart {
        assert_eq!(records(run), vec![(RECORD_FLAG_THREADED_NONATOMIC | RECORD_FLAG_THREADS_IN_FLIGHT, 1)]);
        assert!(!any_negative(&show_json(run)));
    }
}

/// threads_at_exit.c "naps": a worker that sleeps 200 µs between steps is asleep at some dumps at exit and
/// wakes during others. The census before the lock said "asleep" and the one after the drain "it ran", so such
/// runs were merged into the profile flagged, which made every function there inexact for good (found by the
/// corpus's check of this change: 18 of 40 runs). Now the census is taken right around the drain, and a dump
/// that finds a thread ran there puts its counts back and tries again, writing apart after three attempts:
/// the profile holds only exact runs and every run is somewhere. Edge and path mode, 20 runs into one
/// profile.
#[test]
fn a_thread_that_wakes_during_the_dump_at_exit_never_flags_the_profile() {
    let dir = scratch("threads-naps");
    for mode in ["edge", "path"] {
        let exe = build(&dir, mode, &["threads_at_exit.c"], "-O1", mode, true);
        let profile = dir.join(format!("{mode}.pathprof"));
        for _ in 0..20 {
            let out = output_within(program(&exe, &["naps"], &dir, &profile), 60, "threads_at_exit naps");
            assert_eq!(ending(out.status), Ok(0), "{mode}: {}", describe(&out));
            assert!(out.stderr.is_empty(), "{mode}: {}", describe(&out));
        }
        let apart = files_apart(&profile);
        let merged = if profile.exists() {
            let recs = records(&profile);
            assert!(recs.iter().all(|r| r.0 == 0), "{mode}: a flagged run merged into the profile: {recs:?}");
            let show = show_json(&profile);
            assert!(functions(&show).iter().all(|f| f["exact"] == true), "{mode}: {show}");
            recs[0].1
        } else {
            0
        };
        // A file apart holds a whole run, or what a run's module destructor found new after its exit dump had
        // merged into the profile (a record of its own, so it says 1 run too): flagged either way.
        for file in &apart {
            assert_eq!(records(file), vec![(RECORD_FLAG_THREADS_IN_FLIGHT, 1)], "{mode}: {}", file.display());
        }
        assert!(merged <= 20 && merged + apart.len() as u64 >= 20, "{mode}: {merged} merged, {} apart", apart.len());
    }
}

/// Without `/proc` (a chroot or sandbox that does not mount it) the census cannot list threads. A program that
/// never had another thread needs none: its run merges into the profile, exact (the first version of the census
/// wrote every run of every program apart there). One that had threads, even joined ones, cannot be vouched for
/// and is written apart, flagged. Runs where a private mount namespace can hide `/proc` (`unshare -m`, as root).
#[test]
fn without_proc_only_a_program_that_had_threads_is_flagged() {
    if !Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("skipped: `unshare -m` is not permitted here");
        return;
    }
    let dir = scratch("no-proc");
    let threaded = build(&dir, "threaded", &["threads_at_exit.c"], "-O1", "edge", true);
    let single = build(&dir, "single", &["../loops.c"], "-O1", "edge", true);
    for (exe, args, how, threads) in [(&single, &[][..], "single", false), (&threaded, &["joined"][..], "joined", true)]
    {
        let profile = dir.join(format!("{how}.pathprof"));
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "sh", "-c", "mount -t tmpfs none /proc && exec \"$0\" \"$@\""]).arg(exe).args(args);
        cmd.current_dir(&dir).env("PATHPROF_FILE", &profile).stdin(Stdio::null());
        let out = output_within(cmd, 60, "no /proc");
        assert_eq!(ending(out.status), Ok(0), "{how}: {}", describe(&out));
        let written = written_apart(&profile, threads);
        let expect = if threads { RECORD_FLAG_THREADS_IN_FLIGHT } else { 0 };
        assert_eq!(records(&written), vec![(expect, 1)], "{how}");
    }
}

/// A profile of one run of a program that forks once without handlers (raw_fork.c, syscall_fork.c): one
/// record holding the parent's run and the child's, every function exact, main, child_work and parent_work
/// entered once each.
fn assert_one_fork(profile: &Path, what: &str) {
    assert_eq!(records(profile), vec![(0, 2)], "{what}: one record, the parent's run and the child's");
    let show = show_json(profile);
    assert!(functions(&show).iter().all(|f| f["exact"] == true), "{what}: {show}");
    let entries = entry_counts(&show);
    for (f, n) in [("main", 1), ("child_work", 1), ("parent_work", 1)] {
        assert_eq!(entries[f], Some(n), "{what}: {f}");
    }
}

/// Trace mode on such a program (`source` run with `args`): two traces, the child's going on from its parent's
/// at the fork, into child_work, the parent's complete — as after `fork`.
fn assert_fork_traces(dir: &Path, source: &str, args: &[&str]) {
    let exe = build(dir, "trace", &[source], "-O1", "trace", false);
    let mut cmd = program(&exe, args, dir, &dir.join("unused.pathprof"));
    cmd.env("PATHPROF_TRACE", dir.join("t-%p.pathtrace"));
    let out = output_within(cmd, 60, &format!("{source} trace"));
    assert_eq!(ending(out.status), Ok(0), "trace: {}", describe(&out));
    let summaries: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pathtrace"))
        .map(|t| {
            let out = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary"]).arg(&t));
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .collect();
    assert_eq!(summaries.len(), 2, "{summaries:?}");
    let child = summaries.iter().find(|s| s.contains("a fork child")).expect("the child's trace");
    assert!(child.contains("child_work (") && child.contains("): 1 entries"), "{child}");
    let parent = summaries.iter().find(|s| !s.contains("a fork child")).expect("the parent's trace");
    assert!(parent.contains(", complete") && parent.contains("parent_work ("), "{parent}");
}

/// raw_fork.c (its comment gives the counts): `_Fork` runs no `pthread_atfork` handlers, so the child kept its
/// parent's counts and, at its exit, wrote them a second time (`main` entered 2 times, exact). The pass sends
/// `_Fork` to the runtime, which runs its fork handlers around it: every counting mode exact, one run per
/// process.
#[test]
fn a_fork_without_handlers_counts_like_fork() {
    let dir = scratch("raw-fork");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, mode, &["raw_fork.c"], "-O1", mode, false);
        let profile = dir.join(format!("{mode}.pathprof"));
        let out = output_within(program(&exe, &[], &dir, &profile), 60, "raw_fork");
        assert_eq!(ending(out.status), Ok(0), "{mode}: {}", describe(&out));
        assert!(out.stderr.is_empty(), "{mode}: {}", describe(&out));
        assert_one_fork(&profile, mode);
    }
    assert_fork_traces(&dir, "raw_fork.c", &[]);
}

/// syscall_fork.c (its comment gives the counts): a `fork`, `clone` or `clone3` system call made through
/// `syscall(2)` runs no fork handlers, so the child kept its parent's counts and wrote them a second time at its
/// exit (`main` entered 2 times, `work` 25 for 15 in a program of this kind, all exact). The pass sends
/// `syscall` to the runtime, which runs its fork handlers around such a call: every counting mode exact, one run
/// per process; the other system calls pass through.
#[test]
fn a_fork_through_syscall_counts_like_fork() {
    let dir = scratch("syscall-fork");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, mode, &["syscall_fork.c"], "-O1", mode, false);
        for how in ["fork", "clone", "clone3"] {
            let profile = dir.join(format!("{mode}-{how}.pathprof"));
            let out = output_within(program(&exe, &[how], &dir, &profile), 60, "syscall_fork");
            if how == "clone3" && ending(out.status) == Ok(4) {
                eprintln!("skipping clone3: the kernel has none");
                continue;
            }
            assert_eq!(ending(out.status), Ok(0), "{mode} {how}: {}", describe(&out));
            assert!(out.stderr.is_empty(), "{mode} {how}: {}", describe(&out));
            assert_one_fork(&profile, &format!("{mode} {how}"));
        }
    }
    assert_fork_traces(&dir, "syscall_fork.c", &["clone"]);
}

/// sandboxed.c (its comment gives the counts): a program that confines itself in a seccomp sandbox, which kills
/// it at any system call but write and exit, runs as its plain build does (before, the profile write at exit
/// killed it with SIGSYS, status 159). The runtime writes what it counted before the sandbox closed, apart and
/// flagged incomplete (what runs after cannot be written), and nothing after: before() 3 entries, after() none.
/// Trace mode ends every thread's trace there, cut short with the reason.
#[test]
fn a_program_in_a_seccomp_sandbox_ends_as_its_plain_build() {
    let dir = scratch("sandboxed");
    for mode in ["edge", "path", "context"] {
        let exe = build(&dir, mode, &["sandboxed.c"], "-O1", mode, false);
        let profile = dir.join(format!("{mode}.pathprof"));
        let out = output_within(program(&exe, &[], &dir, &profile), 60, "sandboxed");
        assert_eq!(ending(out.status), Ok(0), "{mode}: {}", describe(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "sandboxed 15\n", "{mode}: {}", describe(&out));
        assert!(out.stderr.is_empty(), "{mode}: {}", describe(&out));
        let written = written_apart(&profile, true);
        assert!(
            records(&written).iter().all(|(f, _)| f & RECORD_FLAG_INCOMPLETE != 0),
            "{mode}: {:?}",
            records(&written)
        );
        let show = show_json(&written);
        let entries = entry_counts(&show);
        assert_eq!(entries["before"], Some(3), "{mode}");
        assert!(matches!(entries.get("after"), None | Some(None) | Some(Some(0))), "{mode}: {entries:?}");
        assert_eq!(function(&show, "main")["exact"], false, "{mode}");
    }
    // Trace mode: the trace ends where the sandbox closes, cut short, and says why.
    let exe = build(&dir, "trace", &["sandboxed.c"], "-O1", "trace", false);
    let trace = dir.join("sandboxed.pathtrace");
    let mut cmd = program(&exe, &[], &dir, &dir.join("unused.pathprof"));
    cmd.env("PATHPROF_TRACE", &trace);
    let out = output_within(cmd, 60, "sandboxed trace");
    assert_eq!(ending(out.status), Ok(0), "trace: {}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sandboxed 15\n", "trace: {}", describe(&out));
    assert!(out.stderr.is_empty(), "trace: {}", describe(&out));
    let summary = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary"]).arg(&trace)).stdout;
    let summary = String::from_utf8_lossy(&summary);
    assert!(summary.contains("cut short: the program confined itself in a seccomp sandbox"), "{summary}");
    assert!(summary.contains("function before (") && summary.contains("): 3 entries"), "{summary}");
    assert!(!summary.contains("function after ("), "{summary}");
}

/// clone_child.c (its comment gives the counts): the C library's `clone` runs no fork handlers, and a child
/// without `CLONE_VM` ends, when its function returns, with the exit system call. Before, such a child's counts
/// were lost (`child_main` and `child_work` read 0 entries, exact), or, when it called `exit`, written on top of
/// its parent's copy (`main` entered 2 times). The pass sends `clone` to the runtime, which runs the fork
/// handlers in the child and writes its counts when its function returns: every counting mode exact, the parent's
/// and the child's run merged; a `CLONE_VM` child counts in its parent's memory, as before. The child's stack is 4
/// KiB above a guard page: the runtime's work in the child, which needs more, runs on a stack of its own.
#[test]
fn a_clone_child_counts_once_and_is_written() {
    let dir = scratch("clone-child");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, mode, &["clone_child.c"], "-O1", mode, false);
        for (how, runs) in [("return", 2), ("exit", 2), ("vm", 1)] {
            let profile = dir.join(format!("{mode}-{how}.pathprof"));
            let out = output_within(program(&exe, &[how], &dir, &profile), 60, "clone_child");
            assert_eq!(ending(out.status), Ok(0), "{mode} {how}: {}", describe(&out));
            assert!(out.stderr.is_empty(), "{mode} {how}: {}", describe(&out));
            assert_eq!(records(&profile), vec![(0, runs)], "{mode} {how}: the runs merged");
            let show = show_json(&profile);
            assert!(functions(&show).iter().all(|f| f["exact"] == true), "{mode} {how}: {show}");
            let entries = entry_counts(&show);
            for f in ["main", "child_main", "child_work", "parent_work"] {
                assert_eq!(entries[f], Some(1), "{mode} {how}: {f}");
            }
        }
    }
    // A program's own `clone` (own_clone.c declares it, own_clone_def.c defines it) is not the C library's: its
    // calls stay its own. (Sent to the runtime, they reached it by chance here — the runtime's own call of
    // `clone` binds to the program's — so the object is what tells.)
    let obj = dir.join("own_clone.o");
    run_ok(wrapper(false).args(["-O1", "-c"]).arg(src("own_clone.c")).arg("-o").arg(&obj));
    let undefined = run_ok(Command::new("llvm-nm-19").arg("-u").arg(&obj)).stdout;
    assert!(!String::from_utf8_lossy(&undefined).contains(symbols::CLONE), "{}", String::from_utf8_lossy(&undefined));
    let exe = build(&dir, "own", &["own_clone.c", "own_clone_def.c"], "-O1", "path", false);
    let out = output_within(program(&exe, &[], &dir, &dir.join("own.pathprof")), 60, "own_clone");
    assert_eq!(
        (ending(out.status), String::from_utf8_lossy(&out.stdout).as_ref()),
        (Ok(0), "3 1\n"),
        "{}",
        describe(&out)
    );
    // Trace mode: the child's trace goes on from its parent's at the clone, into its function.
    let exe = build(&dir, "trace", &["clone_child.c"], "-O1", "trace", false);
    for how in ["return", "exit"] {
        let mut cmd = program(&exe, &[how], &dir, &dir.join("unused.pathprof"));
        cmd.env("PATHPROF_TRACE", dir.join(format!("t-{how}-%p.pathtrace")));
        let out = output_within(cmd, 60, "clone_child trace");
        assert_eq!(ending(out.status), Ok(0), "trace {how}: {}", describe(&out));
        let summaries: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("t-{how}-"))))
            .map(|t| {
                let out = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary"]).arg(&t));
                String::from_utf8_lossy(&out.stdout).into_owned()
            })
            .collect();
        assert_eq!(summaries.len(), 2, "trace {how}: {summaries:?}");
        let child = summaries.iter().find(|s| s.contains("a fork child")).expect("the child's trace");
        assert!(child.contains("function child_work (") && child.contains("): 1 entries"), "{child}");
        let parent = summaries.iter().find(|s| !s.contains("a fork child")).expect("the parent's trace");
        assert!(parent.contains(", complete") && parent.contains("function parent_work ("), "{parent}");
        assert!(!parent.contains("child_work"), "{parent}");
    }
}

/// small_stack_exit.c (its comment gives the counts): a thread with a 16 KiB stack (`PTHREAD_STACK_MIN`) calls
/// `exit`, so the write at exit runs on it. It took between 8 and 16 KiB of stack and crashed the program
/// (SIGSEGV, every counting mode) where the plain build exits 0; the runtime now writes on a stack of its own,
/// in every mode (atomic counting builds: the program has two threads).
#[test]
fn a_thread_with_the_smallest_stack_can_exit() {
    let dir = scratch("small-stack-exit");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, mode, &["small_stack_exit.c"], "-O1", mode, true);
        let profile = dir.join(format!("{mode}.pathprof"));
        let out = output_within(program(&exe, &[], &dir, &profile), 60, "small_stack_exit");
        assert_eq!(ending(out.status), Ok(0), "{mode}: {}", describe(&out));
        let show = show_json(&profile);
        assert!(functions(&show).iter().all(|f| f["exact"] == true), "{mode}: {show}");
        let entries = entry_counts(&show);
        for f in ["main", "worker", "work"] {
            assert_eq!(entries[f], Some(1), "{mode}: {f}");
        }
    }
    // Trace mode writes at exit on that thread too.
    let exe = build(&dir, "trace", &["small_stack_exit.c"], "-O1", "trace", false);
    let trace = dir.join("small.pathtrace");
    let mut cmd = program(&exe, &[], &dir, &dir.join("unused.pathprof"));
    cmd.env("PATHPROF_TRACE", &trace);
    let out = output_within(cmd, 60, "small_stack_exit trace");
    assert_eq!(ending(out.status), Ok(0), "trace: {}", describe(&out));
    let summary = run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary"]).arg(&trace)).stdout;
    let summary = String::from_utf8_lossy(&summary);
    assert!(summary.contains("function work (") && summary.contains("): 1 entries"), "{summary}");
}

/// threads_at_exit.c (its comment gives the counts): a thread still running when the process ends — a
/// detached worker in a loop, as QuickJS's are — leaves activations in the middle of a block, where no counter
/// accounts for them. Before, edge and block mode derived counts as if they had returned (`worker` and `spin`
/// entered 0 times, exact) and the path modes read functions INEXACT in some runs. Now the dump at the end
/// flags every record (which activations were in flight is not known) and writes it apart, at `exit` as at
/// `_exit`; a thread asleep in a call that may not return (`pause`) leaves exact counts, as does a joined one
/// one waiting in uninterruptible sleep inside a system call (`vfork`'s wait for its child), and one asleep at
/// exit's dump that the program's destructor wakes and joins (its last steps are counted by
/// the module destructor's dump), and a main thread that `pthread_exit`ed before the last thread ended the
/// process (a zombie, not a running thread), and a pool worker that spins in uninstrumented code for 100 ms
/// before it sleeps, as OpenMP's do after every parallel region (the dump at the end waits for it to fall
/// asleep, `PATHPROF_EXIT_WAIT`; every such run was written apart, flagged, before), unless told not to wait
/// (`PATHPROF_EXIT_WAIT=0`: flagged).
/// Every counting mode, atomic counters (so that only the new flag is in play).
#[test]
fn a_thread_running_when_the_process_ends_flags_the_counts() {
    let dir = scratch("threads-at-exit");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, mode, &["threads_at_exit.c"], "-O1", mode, true);
        let hows = [
            "spin",
            "spin_",
            "parked",
            "parked_nofd",
            "vforked",
            "joined",
            "woken",
            "main_exits",
            "pooled",
            "pooled_",
            "pooled-nowait",
        ];
        for how in hows {
            let flagged = how.starts_with("spin") || how == "pooled-nowait";
            let profile = dir.join(format!("{mode}-{how}.pathprof"));
            let exe_name = exe.to_string_lossy();
            let cmd = if how == "parked_nofd" {
                let limited = ["-c", "ulimit -n 256; exec \"$0\" \"$@\"", &exe_name, how];
                program(Path::new("sh"), &limited, &dir, &profile)
            } else if how == "pooled-nowait" {
                let mut cmd = program(&exe, &["pooled"], &dir, &profile);
                cmd.env("PATHPROF_EXIT_WAIT", "0");
                cmd
            } else {
                program(&exe, &[how], &dir, &profile)
            };
            let out = output_within(cmd, 60, "threads_at_exit");
            assert_eq!(ending(out.status), Ok(0), "{mode} {how}: {}", describe(&out));
            assert!(out.stderr.is_empty(), "{mode} {how}: {}", describe(&out));
            let written = written_apart(&profile, flagged);
            if flagged {
                // The profile a user asks for does not exist: the reader says where the run went, on one line.
                let out = Command::new(dist().join("bin/pathprof")).arg("show").arg(&profile).output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(2), "{mode} {how}: {err}");
                assert_eq!(err.lines().count(), 1, "{mode} {how}: {err}");
                assert!(err.contains("1 run was written apart"), "{mode} {how}: {err}");
                assert!(err.contains(&*written.to_string_lossy()), "{mode} {how}: {err}");
            }
            let flags: Vec<u64> = records(&written).iter().map(|r| r.0).collect();
            let expect = if flagged { RECORD_FLAG_THREADS_IN_FLIGHT } else { 0 };
            assert_eq!(flags, vec![expect], "{mode} {how}");
            let show = show_json(&written);
            for f in functions(&show) {
                assert_eq!(f["exact"], !flagged, "{mode} {how}: {f}");
                assert_eq!(has_reason(f, "another thread was running"), flagged, "{mode} {how}: {f}");
            }
            if !flagged {
                let entries = entry_counts(&show);
                let (parked, woken) = (u64::from(how.starts_with("parked")), u64::from(how == "woken"));
                for (f, n) in [
                    ("main", 1),
                    ("worker", 1),
                    ("step", 10),
                    ("park", parked),
                    ("spin", 0),
                    ("wait_for_stop", woken),
                    ("finish", woken),
                    ("join_worker", u64::from(!how.ends_with('_'))), // _exit runs no destructor
                ] {
                    assert_eq!(entries[f], Some(n), "{mode} {how}: {f}");
                }
            }
        }
    }
}

/// fork + exec, vfork + exec, vfork + _exit and posix_spawn of another instrumented program (spawned.c, run
/// with argument 7: squares() 4 even / 3 odd), in every mode, with and without --pathprof-atomic: one profile
/// with both modules, both exact; the spawner's count() 7 odd / 8 even calls. A fork child writes what it
/// counted right before its exec (a run of its own, so the spawner's record has 2 runs): main's resumption in
/// the child is a fork re-entry, and its branch to exec an abnormal exit of that block — without the write
/// before exec, that branch would read 0, exact. A vfork child shares the parent's memory and writes nothing,
/// so its branch to exec/_exit is counted in the parent's profile, once, as an abnormal exit of that block,
/// with no re-entry (vfork and posix_spawn run no fork handlers, so nothing is resumed without having been
/// entered).
#[test]
fn child_processes_merge_exactly_and_vfork_is_harmless() {
    for (mode, atomic) in
        [("edge", false), ("path", false), ("context", false), ("piecewise", false), ("path", true), ("edge", true)]
    {
        let dir = scratch(&format!("spawn-{mode}-{atomic}"));
        let spawner = build(&dir, "spawner", &["spawner.c"], "-O1", mode, atomic);
        let spawned = build(&dir, "spawned", &["spawned.c"], "-O1", mode, atomic);
        for how in ["fork-exec", "vfork-exec", "vfork-exit", "posix_spawn"] {
            let what = format!("{mode}{} {how}", if atomic { " atomic" } else { "" });
            let prof = dir.join(format!("{how}.pathprof"));
            let out = output_within(program(&spawner, &[how, spawned.to_str().unwrap()], &dir, &prof), 60, &what);
            assert_eq!(ending(out.status), Ok(7), "{what}: {}", describe(&out));
            assert!(out.stderr.is_empty(), "{what}: {}", describe(&out));
            let execs = how != "vfork-exit";
            let forks = how == "fork-exec";
            let mut runs = records(&prof);
            runs.sort();
            let mut expected = vec![(0, 1); usize::from(execs)];
            expected.push((0, 1 + u64::from(forks)));
            assert_eq!(runs, expected, "{what}");
            let show = show_json(&prof);
            assert!(functions(&show).iter().all(|f| f["exact"] == true), "{what}: {show}");
            for f in functions(&show) {
                let reentries: u64 =
                    f["fork_reentries"].as_array().unwrap().iter().map(|r| r["count"].as_u64().unwrap()).sum();
                let resumed = forks && f["name"] == "main" && f["file"].as_str().unwrap().ends_with("spawner.c");
                assert_eq!(reentries, u64::from(resumed), "{what} {}: {}", f["name"], f["fork_reentries"]);
            }
            assert_markers(&show, &src("spawner.c"));
            assert_eq!(function(&show, "count")["entry_count"], 15, "{what}");
            if execs {
                assert_markers(&show, &src("spawned.c"));
            }
            // Every mode profiles main, which calls vfork (returns_twice), the interprocedural ones included.
            let main = functions(&show)
                .iter()
                .find(|f| f["name"] == "main" && f["file"].as_str().unwrap().ends_with("spawner.c"))
                .unwrap_or_else(|| panic!("{what}: main missing"));
            let abnormal: u64 =
                main["abnormal_exits"].as_array().unwrap().iter().map(|a| a["count"].as_u64().unwrap()).sum();
            assert_eq!(abnormal, u64::from(how != "posix_spawn"), "{what}: {}", main["abnormal_exits"]);
        }
    }
}

/// A program that uses up its descriptors before it exits (GNU make's include loop under `ulimit -n 128`) still
/// gets its profile: the runtime holds two descriptors for the dump (`rt/src/fd_reserve.rs`), so the program
/// opens two fewer than the plain build before `EMFILE` — the price, checked here too. Before, every mode lost
/// the process's profile ("cannot write profile …: Too many open files").
#[test]
fn a_program_that_used_up_its_descriptors_still_gets_its_profile() {
    let dir = scratch("descriptors");
    let plain = dir.join("plain");
    run_ok(Command::new("clang-19").arg("-O1").arg(src("descriptors_used_up.c")).arg("-o").arg(&plain));
    let run = |exe: &Path, profile: &Path| {
        let mut c = Command::new("sh");
        c.arg("-c").arg("ulimit -n 128; exec \"$0\"").arg(exe).current_dir(&dir).env("PATHPROF_FILE", profile);
        let out = output_within(c, 60, "descriptors_used_up");
        assert_eq!(ending(out.status), Ok(0), "{}", describe(&out));
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        let fields: Vec<u64> = text.split_whitespace().map(|f| f.parse().unwrap()).collect();
        assert_eq!(fields.get(1), Some(&1), "the last open failed with EMFILE: {}", describe(&out));
        (fields[0], out)
    };
    let (plain_opened, _) = run(&plain, &dir.join("unused.pathprof"));
    for mode in ["edge", "path", "context"] {
        let exe = build(&dir, mode, &["descriptors_used_up.c"], "-O1", mode, false);
        let profile = dir.join(format!("{mode}.pathprof"));
        let (opened, out) = run(&exe, &profile);
        assert!(out.stderr.is_empty(), "{mode}: {}", describe(&out));
        assert_eq!(opened + 2, plain_opened, "{mode}: two descriptors are the runtime's");
        let show = show_json(&profile);
        let main = function(&show, "main");
        assert_eq!(main["exact"], true, "{mode}: {main}");
        let counts: Vec<u64> =
            main["blocks"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).collect();
        assert!(counts.contains(&opened), "{mode}: the loop body ran {opened} times: {counts:?}");
    }
    // Trace mode holds its file and one spare: the program runs as under the counting runtime.
    let exe = build(&dir, "trace", &["descriptors_used_up.c"], "-O1", "trace", false);
    let trace = dir.join("run.pathtrace");
    let mut c = Command::new("sh");
    c.arg("-c").arg("ulimit -n 128; exec \"$0\"").arg(&exe).current_dir(&dir).env("PATHPROF_TRACE", &trace);
    let out = output_within(c, 60, "descriptors_used_up trace");
    let opened: u64 = String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(opened + 2, plain_opened, "trace: its file and a spare are the runtime's");
    assert!(trace.exists(), "{}", describe(&out));
}

/// A program that defines its own `malloc`, `realloc`, `free` and `getenv` (bash's lib/malloc and lib/sh/getenv.c),
/// instrumented: the runtime calls none of them (its buffers are mapped, its variables read from `environ`), so
/// their counts are the program's calls, as own_allocator.c derives them, in every counting mode. Before, the
/// runtime's buffers and lookups ran through them (malloc 33 entries for the program's 5, getenv 8 for 1, all
/// exact), and what they counted during the exit dump made each of their modules' destructors write the whole
/// profile again (bash: six writes per process).
#[test]
fn a_program_with_its_own_malloc_and_getenv_counts_only_its_own_calls() {
    let dir = scratch("own_allocator");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, mode, &["own_allocator.c"], "-O1", mode, false);
        let profile = dir.join(format!("{mode}.pathprof"));
        let _ = std::fs::remove_file(&profile);
        let out = output_within(program(&exe, &[], &dir, &profile), 60, "own_allocator");
        assert_eq!(ending(out.status), Ok(0), "{mode}: {}", describe(&out));
        assert!(out.stderr.is_empty(), "{mode}: {}", describe(&out));
        let show = show_json(&profile);
        for (f, entries) in [("main", 1), ("malloc", 5), ("realloc", 2), ("free", 2), ("getenv", 1), ("calloc", 0)] {
            let func = function(&show, f);
            assert_eq!(func["exact"], true, "{mode}: {f}: {func}");
            assert_eq!(func["entry_count"].as_u64(), Some(entries), "{mode}: {f}: {func}");
        }
    }
}

/// A program that defines its own `memcpy`, `memmove`, `memset`, `memcmp`, `strlen`, `write`, `getpid` and
/// `clock_gettime` (own_libc.c): the runtime brings its own (`rt/src/own_libc.rs`), so their counts are the
/// program's calls, as own_libc.c derives them, in every mode, and trace mode runs to the end. Before, the
/// runtime's copies and lookups ran through them (edge mode: memcpy 38 entries for 10, memset 43 for 10, strlen
/// 218 for 2, all reported exact), and a trace-mode build hung in the tracer's own registration.
#[test]
fn a_program_with_its_own_string_and_clock_functions_counts_only_its_own_calls() {
    let dir = scratch("own_libc");
    let want = [
        ("main", 1),
        ("memset", 10),
        ("memcpy", 10),
        ("memmove", 10),
        ("memcmp", 10),
        ("strlen", 2),
        ("write", 1),
        ("getpid", 1),
        ("clock_gettime", 3),
    ];
    for mode in ["edge", "block", "path", "context", "piecewise", "trace"] {
        let mut cc = wrapper(false);
        let exe = dir.join(mode);
        cc.args(["-O1", "-fno-builtin", &format!("--pathprof-mode={mode}")]).arg(src("own_libc.c")).arg("-o").arg(&exe);
        let out = cc.output().expect("run the wrapper");
        assert!(out.status.success(), "{mode}: {}", describe(&out));
        let profile = dir.join(format!("{mode}.pathprof"));
        let trace = dir.join(format!("{mode}.pathtrace"));
        let mut run = program(&exe, &[], &dir, &profile);
        run.env("PATHPROF_TRACE", &trace);
        let out = output_within(run, 60, "own_libc");
        assert_eq!(ending(out.status), Ok(0), "{mode}: {}", describe(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok 0 1 1000000003\n", "{mode}: {}", describe(&out));
        assert!(out.stderr.is_empty(), "{mode}: {}", describe(&out));
        if mode == "trace" {
            let out =
                run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary", "--json"]).arg(&trace));
            let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
            for (f, entries) in want {
                let func = summary["functions"].as_array().unwrap().iter().find(|x| x["name"] == f);
                let func = func.unwrap_or_else(|| panic!("{f} in {summary}"));
                assert_eq!(func["entries"].as_u64(), Some(entries), "trace: {f}: {func}");
            }
            continue;
        }
        let show = show_json(&profile);
        for (f, entries) in want {
            let func = function(&show, f);
            assert_eq!(func["exact"], true, "{mode}: {f}: {func}");
            assert_eq!(func["entry_count"].as_u64(), Some(entries), "{mode}: {f}: {func}");
        }
    }
}

/// What the program's destructors run is counted (destructors.c): they run after the `atexit` handlers, where
/// the runtime writes the profile, so the pass's module destructor — the last to run — merges what they counted
/// since. Before, `bye` and `helper` read back with no entries, and exact. Every counting mode, returning from
/// `main`, calling `exit` from a callee and `quick_exit` (no destructor runs); counts as the program's comment
/// derives them.
#[test]
fn what_destructors_run_after_the_exit_dump_is_counted() {
    let dir = scratch("destructors");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, mode, &["../destructors.c"], "-O1", mode, false);
        for (args, code) in [(&[][..], 0), (&["x"][..], 3), (&["q"][..], 4)] {
            let quick = code == 4;
            let profile = dir.join(format!("{mode}-{code}.pathprof"));
            let out = output_within(program(&exe, args, &dir, &profile), 60, "destructors");
            assert_eq!(ending(out.status), Ok(code), "{mode} {args:?}: {}", describe(&out));
            assert!(out.stderr.is_empty(), "{mode} {args:?}: {}", describe(&out));
            let show = show_json(&profile);
            let after = if quick { 0 } else { 1 };
            for (f, entries) in
                [("bye", after), ("helper", 10 * after), ("at_exit_fn", after), ("on_quick_exit", 1 - after)]
            {
                let f = function(&show, f);
                assert_eq!(f["exact"], true, "{mode} {args:?}: {f}");
                assert_eq!(f["entry_count"].as_u64(), Some(entries), "{mode} {args:?}: {f}");
            }
            if quick {
                continue;
            }
            let counts = |name: &str| -> Vec<u64> {
                let f = function(&show, name);
                f["blocks"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).collect()
            };
            assert!(counts("helper").contains(&4) && counts("helper").contains(&6), "{mode}: {:?}", counts("helper"));
            assert!(counts("bye").contains(&10), "{mode}: {:?}", counts("bye"));
        }
    }
}

/// A `dlopen`ed plugin with its own runtime copy, `dlclose`d before the program faults: with
/// `PATHPROF_SIGNALS=1` both copies' handlers run (the plugin's chains to the executable's) and both modules
/// are flushed incomplete; with `PATHPROF_DUMP_INTERVAL` the plugin's timer thread keeps running after the
/// `dlclose` without crashing (its image stays mapped). plugin_f ran 10 times: 5 odd, 5 even arguments.
#[test]
fn dlclosed_plugin_with_signals_or_interval_is_safe() {
    let dir = scratch("plugin");
    let lib = dir.join("libplugin.so");
    run_ok(wrapper(false).args(["-O1", "-fPIC", "-shared"]).arg(src("plugin.c")).arg("-o").arg(&lib));
    let exe = dir.join("host");
    run_ok(wrapper(false).arg("-O1").arg(src("plugin_host.c")).arg("-ldl").arg("-o").arg(&exe));
    for (var, value, args, end) in [
        ("PATHPROF_SIGNALS", "1", &["crash"][..], Err(11)),
        ("PATHPROF_DUMP_INTERVAL", "0.05", &["crash"][..], Err(11)),
        ("PATHPROF_DUMP_INTERVAL", "0.05", &[][..], Ok(0)),
    ] {
        let what = format!("{var}={value} {args:?}");
        let prof = dir.join(format!("{var}-{}.pathprof", args.len()));
        let mut cmd = program(&exe, args, &dir, &prof);
        cmd.env(var, value);
        let out = output_within(cmd, 30, &what);
        assert_eq!(ending(out.status), end, "{what}: {}", describe(&out));
        assert_eq!(out.stdout, b"85\n", "{what}"); // 3 (1 + 3 + 5 + 7 + 9) + (0 + 1 + 2 + 3 + 4)
        let show = show_json(&prof);
        assert_markers(&show, &src("plugin.c"));
        let recs = records(&prof);
        if var == "PATHPROF_SIGNALS" {
            assert_eq!(recs.len(), 2, "{what}: both modules flushed");
            assert!(recs.iter().all(|(f, _)| f & RECORD_FLAG_INCOMPLETE != 0), "{what}: {recs:?}");
        } else {
            assert!(recs.iter().all(|(f, _)| f & RECORD_FLAG_THREADED_NONATOMIC != 0), "{what}: {recs:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The CLI on the fuzz corpus

fn fnv1a64(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| (h ^ u64::from(c)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The fuzz targets' `fixup` (fuzz/fuzz_targets/common.rs), restated without the format crate: recompute
/// `meta_hash`, `name_hash` (the module name and, from metadata version 4 on, its output are the first fields
/// of the postcard metadata, after 8 bytes of magic and version: each a LEB128 length and the bytes), `payload_len` and the checksum, so mutated inputs reach
/// the record and count logic. (common.rs sets `name_hash` only when the whole metadata decodes; when it does
/// not, the reader refuses the file either way.)
fn fixup(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    if b.len() < 40 || b[..8] != [0xFF, b'p', b'a', b't', b'h', b'p', b'r', 0x81] {
        return b;
    }
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let n = u32::from_le_bytes(b[16..20].try_into().unwrap()).min(64);
    let mut at = 40usize;
    for _ in 0..n {
        if at + 64 > b.len() {
            break;
        }
        let meta_len = u64_at(&b, at + 16);
        let Some(meta_end) = usize::try_from(meta_len).ok().and_then(|l| (at + 64).checked_add(l)) else { break };
        let Some(meta) = b.get(at + 64..meta_end) else { break };
        let meta_hash = fnv1a64(meta);
        // A postcard string at `p[i..]`: LEB128 length, bytes; returns the bytes and the offset after them.
        let string = |p: &[u8], mut i: usize| -> Option<(Vec<u8>, usize)> {
            let (mut len, mut shift) = (0usize, 0u32);
            loop {
                let c = *p.get(i)?;
                len |= usize::from(c & 0x7f).checked_shl(shift)?;
                i += 1;
                if c & 0x80 == 0 {
                    break;
                }
                shift += 7;
            }
            let end = i.checked_add(len)?;
            Some((p.get(i..end)?.to_vec(), end))
        };
        // name_hash: fnv1a64 of the name, or of name, NUL, output when the module has an output (metadata
        // version 4 and later; earlier versions have no output field).
        let version = meta.get(4..8).map_or(0, |v| u32::from_le_bytes(v.try_into().unwrap()));
        let name_hash = meta.get(8..).and_then(|p| {
            let (name, after) = string(p, 0)?;
            let (output, _) = if version >= 4 { string(p, after)? } else { (Vec::new(), after) };
            let mut bytes = name;
            if !output.is_empty() {
                bytes.push(0);
                bytes.extend_from_slice(&output);
            }
            Some(fnv1a64(&bytes))
        });
        b[at + 8..at + 16].copy_from_slice(&meta_hash.to_le_bytes());
        if let Some(h) = name_hash {
            b[at + 56..at + 64].copy_from_slice(&h.to_le_bytes());
        }
        let Some(next) = usize::try_from(u64_at(&b, at)).ok().and_then(|l| at.checked_add(l)) else { break };
        if next <= at || next > b.len() {
            break;
        }
        at = next;
    }
    let payload_len = (b.len() - 40) as u64;
    let sum = fnv1a64(&b[40..]);
    b[24..32].copy_from_slice(&payload_len.to_le_bytes());
    b[32..40].copy_from_slice(&sum.to_le_bytes());
    b
}

/// Runs the CLI; asserts exit 0, or 2 with exactly one stderr line, never a signal, within 10 s. Returns the
/// status.
fn cli_survives(args: &[&str], files: &[&Path], what: &str) -> i32 {
    let mut cmd = Command::new(dist().join("bin/pathprof"));
    cmd.args(args).args(files).stdin(Stdio::null());
    let start = Instant::now();
    let out = output_within(cmd, 10, what);
    let took = start.elapsed();
    let code = match ending(out.status) {
        Ok(c) => c,
        Err(sig) => panic!("{what}: pathprof {args:?} killed by signal {sig}: {}", describe(&out)),
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{what}: pathprof {args:?} panicked: {err}");
    match code {
        0 => {}
        2 => assert_eq!(err.lines().count(), 1, "{what}: pathprof {args:?}: {err}"),
        c => panic!("{what}: pathprof {args:?} exited {c}: {}", describe(&out)),
    }
    assert!(took < Duration::from_secs(5), "{what}: pathprof {args:?} took {took:?}");
    code
}

/// Every trace seed of the fuzz target `trace` (fuzz/seeds/*-{trace,ring,naive}.seed: real trace files of
/// threads, longjmp, exceptions, a region, a crashed flight recorder, naive items), as is and corrupted — cut
/// at seven points, and with a byte flipped at sixteen places: `pathprof trace --summary --json` and
/// `pathprof trace --last 3` exit 0, or 2 with one stderr line, never panic. The fuzz target covers the reader
/// and core's regeneration; this covers what the CLI adds (fork gates, fault cuts, windows, listings). An
/// intact seed must read (exit 0).
#[test]
fn trace_cli_survives_corrupted_trace_seeds() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&seeds)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|f| {
            let n = f.file_name().unwrap().to_string_lossy();
            ["-trace.seed", "-ring.seed", "-naive.seed"].iter().any(|s| n.ends_with(s))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 5, "the trace seeds are missing under {}", seeds.display());
    let dir = scratch("trace-seeds");
    let (mut runs, mut refused) = (0usize, 0usize);
    for (i, f) in files.iter().enumerate() {
        let bytes = std::fs::read(f).unwrap();
        let what = f.display().to_string();
        let mut variants = vec![("intact".to_string(), bytes.clone())];
        for k in 1..8 {
            variants.push((format!("cut at {k}/8"), bytes[..bytes.len() * k / 8].to_vec()));
        }
        for k in 0..16 {
            let at = (k * 7919 + 13) % bytes.len();
            let mut b = bytes.clone();
            b[at] ^= 0xa5;
            variants.push((format!("byte {at} flipped"), b));
        }
        for (v, (how, b)) in variants.iter().enumerate() {
            let path = dir.join(format!("{i}-{v}.pathtrace"));
            std::fs::write(&path, b).unwrap();
            let what = format!("{what} ({how})");
            for args in [&["trace", "--summary", "--json"][..], &["trace", "--last", "3"]] {
                let code = cli_survives(args, &[&path], &what);
                assert!(v > 0 || code == 0, "{what}: an intact seed must read: pathprof {args:?} exited {code}");
                runs += 1;
                refused += usize::from(code != 0);
            }
        }
    }
    eprintln!("{} trace seeds: {runs} CLI runs, {refused} refused with one line", files.len());
}

/// Every file of the fuzz corpus (fuzz/corpus/<target>/, and any crash reproducer in fuzz/artifacts/), as is
/// and with its integrity fields fixed up as the fuzz targets do: `pathprof show`, `show --json`, `decode`,
/// `decode --json` and `merge` exit 0, or 2 with one stderr line, never panic or die of a signal, and each run
/// takes under 5 s. The merge corpus's inputs are two profiles (split as in fuzz_targets/merge.rs).
#[test]
fn cli_survives_every_fuzz_corpus_file() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for sub in ["corpus", "artifacts"] {
        let Ok(targets) = std::fs::read_dir(fuzz.join(sub)) else { continue };
        for t in targets {
            let t = t.unwrap().path();
            for f in std::fs::read_dir(&t).unwrap() {
                let f = f.unwrap().path();
                if f.is_file() {
                    files.push((t.file_name().unwrap().to_string_lossy().into_owned(), f));
                }
            }
        }
    }
    files.sort();
    assert!(files.len() >= 50, "the fuzz corpus is missing: {} files under {}", files.len(), fuzz.display());
    let dir = scratch("fuzz-corpus");
    let start = Instant::now();
    let (mut ok, mut refused, mut deep) = (0usize, 0usize, 0usize);
    let mut tally = |code: i32| if code == 0 { ok += 1 } else { refused += 1 };
    for (i, (target, f)) in files.iter().enumerate() {
        let bytes = std::fs::read(f).unwrap();
        let what = f.display().to_string();
        // As is: the reader's first checks (the checksum, mostly).
        let raw = dir.join(format!("{i}-raw"));
        std::fs::write(&raw, &bytes).unwrap();
        tally(cli_survives(&["show"], &[&raw], &what));
        // Fixed up: deep into records, metadata and counts.
        let inputs: Vec<Vec<u8>> = if target == "merge" {
            let Some((split, rest)) = bytes.split_first_chunk::<2>() else { continue };
            let at = usize::from(u16::from_le_bytes(*split)).min(rest.len());
            vec![fixup(&rest[..at]), fixup(&rest[at..])]
        } else {
            vec![fixup(&bytes)]
        };
        let paths: Vec<PathBuf> = inputs
            .iter()
            .enumerate()
            .map(|(k, b)| {
                let p = dir.join(format!("{i}-fixed-{k}"));
                std::fs::write(&p, b).unwrap();
                p
            })
            .collect();
        let first: &Path = &paths[0];
        for args in [&["show"][..], &["show", "--json"], &["decode"], &["decode", "--json", "--top", "3"]] {
            let code = cli_survives(args, &[first], &what);
            if args == ["show"] && code == 0 {
                deep += 1;
            }
            tally(code);
        }
        let out = dir.join(format!("{i}-merged"));
        let out_s = out.to_str().unwrap();
        let all: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let merged = cli_survives(&["merge", "-o", out_s], &all, &what);
        tally(merged);
        if merged == 0 {
            tally(cli_survives(&["show", "--json"], &[&out], &what));
        }
    }
    let took = start.elapsed();
    eprintln!(
        "{} corpus files ({deep} read successfully after fixup): {ok} CLI runs succeeded, {refused} refused with \
         one line, in {took:?}",
        files.len()
    );
    // Most corpus inputs exercise the reader's refusals; a few hundred are accepted profiles (edge, path,
    // hashed, merged) that reach the analysis. Far fewer means the fixup no longer matches the layout.
    assert!(deep >= 100, "only {deep} corpus inputs are readable after the fixup");
    assert!(took < Duration::from_secs(600), "the corpus took {took:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// The pass on a large real program

/// sqlite3.c from the libsqlite3-sys crate (feature `bundled`) in the cargo registry, fetched with a throwaway
/// manifest when it is not there yet.
fn sqlite_source() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let find = || -> Option<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(home.join("registry/src"))
            .ok()?
            .flatten()
            .flat_map(|idx| std::fs::read_dir(idx.path()).into_iter().flatten().flatten())
            .filter(|d| d.file_name().to_string_lossy().starts_with("libsqlite3-sys-"))
            .map(|d| d.path().join("sqlite3/sqlite3.c"))
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        found.pop()
    };
    if let Some(p) = find() {
        return Some(p);
    }
    let dir = scratch("sqlite-fetch");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"fetch-sqlite\"\nversion = \"0.0.0\"\nedition = \"2021\"\n[workspace]\n\
         [dependencies]\nlibsqlite3-sys = { version = \"0.30\", features = [\"bundled\"] }\n",
    )
    .unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ok = Command::new(cargo).arg("fetch").current_dir(&dir).status().is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    find()
}

/// sqlite3.c (about 260,000 lines) compiles with the pass at -O0, -O1, -O2, -O3 and -Os, in edge and path
/// mode, with the LLVM verifier on (`wrapper()` adds -fverify-intermediate-code): success and no
/// "pathprof: warning" line. Ten compiles of 10–60 s each: run with `cargo test -- --ignored`.
#[test]
#[ignore = "slow: ten compiles of sqlite3.c (several minutes); run with --ignored"]
fn sqlite3_compiles_at_every_level_in_both_modes() {
    let Some(source) = sqlite_source() else {
        panic!("sqlite3.c not found in the cargo registry and `cargo fetch` of libsqlite3-sys failed");
    };
    let dir = scratch("sqlite");
    for mode in ["edge", "path"] {
        for opt in ["-O0", "-O1", "-O2", "-O3", "-Os"] {
            let start = Instant::now();
            let obj = dir.join(format!("sqlite3-{mode}{opt}.o"));
            let out = run_ok(
                wrapper(false)
                    .arg(opt)
                    .arg(format!("--pathprof-mode={mode}"))
                    .args(["-c", "-w", "-DSQLITE_THREADSAFE=1", "-DSQLITE_OMIT_LOAD_EXTENSION"])
                    .arg(&source)
                    .arg("-o")
                    .arg(&obj),
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("pathprof: warning"), "{mode} {opt}: {err}");
            assert!(obj.metadata().map(|m| m.len() > 0).unwrap_or(false), "{mode} {opt}: no object");
            eprintln!("sqlite3.c {mode} {opt}: {:?}", start.elapsed());
        }
    }
}

/// A full disk, simulated with a file size limit (`ulimit -f 1`, as test suites set it to check how a program
/// handles write errors): the program's output and exit status are unchanged, stderr is exactly one warning
/// line, and no file that looks like a profile is left behind — with `SIGXFSZ` ignored (the write fails with
/// `EFBIG`) and with its default action, which killed the program at exit before the runtime wrote with the
/// signal blocked (exit status 153, its buffered output lost). Path mode and trace mode.
#[test]
fn full_disk_leaves_output_status_and_no_partial_profile() {
    let dir = scratch("full-disk");
    for mode in ["path", "trace"] {
        let exe = build(&dir, mode, &["../cxx_mix.cpp"], "-O2", mode, false);
        let reference = run_ok(
            Command::new(&exe)
                .env("PATHPROF_FILE", dir.join(format!("ok-{mode}.pathprof")))
                .env("PATHPROF_TRACE", dir.join(format!("ok-{mode}.pathtrace"))),
        );
        for (signal, trap) in [("ignored", "trap '' XFSZ; "), ("default", "")] {
            let what = format!("{mode}, SIGXFSZ {signal}");
            let (profile, trace) = (dir.join("full.pathprof"), dir.join("full.pathtrace"));
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("{trap}ulimit -f 1; exec \"$0\""))
                .arg(&exe)
                .env("PATHPROF_FILE", &profile)
                .env("PATHPROF_TRACE", &trace)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{what}: {}", describe(&out));
            assert_eq!(out.stdout, reference.stdout, "{what}: the program's output changed");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{what}: {err}");
            if mode == "trace" {
                assert!(err.starts_with("pathprof: warning: writing the trace failed"), "{what}: {err}");
                let _ = std::fs::remove_file(&trace);
                continue;
            }
            assert!(
                err.starts_with("pathprof: warning: cannot write profile") && err.contains("File too large"),
                "{what}: {err}"
            );
            assert!(!profile.exists(), "{what}: a partial profile was left behind");
            let leftovers: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("full.pathprof") && !n.ends_with(".lock"))
                .collect();
            assert!(leftovers.is_empty(), "{what}: temporary files left: {leftovers:?}");
        }
    }
}

/// A warning to a stderr whose reader has gone (a pipeline's reader exited) fails with `EPIPE` instead of
/// killing the program with `SIGPIPE` at exit: the exit status is the plain run's. (The profile cannot be written
/// here, so the runtime has a warning to print.)
#[test]
fn a_warning_to_a_closed_pipe_never_kills_the_program() {
    let dir = scratch("closed-pipe");
    let exe = build(&dir, "crash", &["crash.c"], "-O1", "edge", false);
    let status = dir.join("status");
    // The reader (`true`) is gone before the program starts; the program's own output goes to a file.
    let out = Command::new("bash")
        .arg("-c")
        .arg("{ sleep 0.3; \"$0\" exit >\"$1\"; echo $? >\"$2\"; } 2>&1 | true")
        .arg(&exe)
        .arg(dir.join("stdout"))
        .arg(&status)
        .env("PATHPROF_FILE", dir.join("missing/dir/p.pathprof"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(std::fs::read_to_string(&status).unwrap(), "0\n", "killed by SIGPIPE (141) or otherwise");
}

/// Every way a real profile (written by an instrumented program, edge and path mode, with sparse path entries)
/// can be cut short or bit-flipped is refused by the reader; through the CLI each is one line and exit 2.
#[test]
fn every_truncation_and_bit_flip_of_a_real_profile_is_refused() {
    let dir = scratch("real-corrupt");
    for (mode, extra) in [("edge", None), ("path", Some("PATHPROF_PATH_ARRAY_MAX=1"))] {
        let exe = dir.join(format!("loops-{mode}"));
        let mut cc = wrapper(false);
        cc.args(["-O2", &format!("--pathprof-mode={mode}")]).arg(programs().join("loops.c")).arg("-o").arg(&exe);
        if let Some(kv) = extra {
            let (k, v) = kv.split_once('=').unwrap();
            cc.env(k, v);
        }
        run_ok(&mut cc);
        let profile = dir.join(format!("{mode}.pathprof"));
        run_ok(Command::new(&exe).env("PATHPROF_FILE", &profile));
        let bytes = std::fs::read(&profile).unwrap();
        assert!(pathprof_format::profile::read(&bytes).is_ok(), "{mode}: the real profile itself must read");
        for len in 0..bytes.len() {
            assert!(
                pathprof_format::profile::read(&bytes[..len]).is_err(),
                "{mode}: truncation to {len} bytes accepted"
            );
        }
        for i in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[i / 8] ^= 1 << (i % 8);
            assert!(pathprof_format::profile::read(&flipped).is_err(), "{mode}: bit flip {i} accepted");
        }
        // A sample of them through the CLI: one line on stderr, exit status 2.
        for len in (0..bytes.len()).step_by(bytes.len() / 16 + 1) {
            let cut = dir.join(format!("{mode}-cut{len}.pathprof"));
            std::fs::write(&cut, &bytes[..len]).unwrap();
            for sub in ["show", "decode"] {
                let out = Command::new(dist().join("bin/pathprof")).arg(sub).arg(&cut).output().unwrap();
                assert_eq!(out.status.code(), Some(2), "{sub} on {len} bytes: {}", describe(&out));
                assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1, "{sub} on {len} bytes");
            }
        }
    }
}

/// Real context and piecewise profiles (the paper's Figure 4 program, and the exception program) with every
/// single bit flipped and the checksums and hashes recomputed (`fixup`), so each mutation reaches the metadata
/// decoder and the interprocedural analysis: every one is refused or analysed, none panics.
#[test]
fn interprocedural_profiles_with_any_bit_flipped_are_refused_or_analysed() {
    let dir = scratch("ip-flips");
    let (mut checked, mut analysed) = (0usize, 0usize);
    for (mode, src, cxx) in
        [("context", "mr_fig4.c", false), ("piecewise", "mr_fig4.c", false), ("context", "exception.cpp", true)]
    {
        let exe = dir.join(format!("{mode}-{src}"));
        run_ok(
            wrapper(cxx)
                .args(["-O0", &format!("--pathprof-mode={mode}")])
                .arg(programs().join(src))
                .arg("-o")
                .arg(&exe),
        );
        let profile = dir.join(format!("{mode}-{src}.pathprof"));
        let _ = Command::new(&exe).env("PATHPROF_FILE", &profile).output().expect("run");
        let bytes = std::fs::read(&profile).unwrap();
        for i in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[i / 8] ^= 1 << (i % 8);
            let fixed = fixup(&flipped);
            let outcome = std::panic::catch_unwind(|| {
                let Ok(p) = pathprof_format::profile::read(&fixed) else { return false };
                for m in &p.modules {
                    let _ = pathprof_analysis::module_path_counts(m);
                    for f in 0..m.meta.functions.len() {
                        let _ = pathprof_analysis::function_edge_counts(m, f);
                    }
                }
                true
            });
            assert!(outcome.is_ok(), "{mode} {src}: bit {i} flipped: panic");
            checked += 1;
            analysed += usize::from(outcome.unwrap_or(false));
        }
    }
    // Flips in counters, in cfg and call-site numbers of the metadata and in path numbers reach the analysis.
    assert!(checked > 10_000 && analysed * 20 > checked, "{checked} mutations, {analysed} analysed");
    eprintln!("{checked} mutations, {analysed} read and analysed");
}

/// The file a run wrote: `profile`, or — when a signal handler of the run did not return, or it ended under a
/// running thread (`apart`) — its `PROFILE.<pid>.incomplete`, the only one (merged into `profile`, the flag
/// would make every run's counts there inexact).
fn written_apart(profile: &Path, apart: bool) -> PathBuf {
    if !apart {
        return profile.to_path_buf();
    }
    assert!(!profile.exists(), "{}: a run written apart merged into the profile", profile.display());
    let found = files_apart(profile);
    assert_eq!(found.len(), 1, "{}: {found:?}", profile.display());
    found.into_iter().next().unwrap()
}

/// Every `PROFILE.<pid>.incomplete` next to `profile`.
fn files_apart(profile: &Path) -> Vec<PathBuf> {
    let stem = format!("{}.", profile.file_name().unwrap().to_string_lossy());
    std::fs::read_dir(profile.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&stem) && name.ends_with(".incomplete")
        })
        .collect()
}

/// Signal handlers the program installs with `sigaction` or `signal` run behind the runtime's trampoline
/// (`rt/src/handlers.rs`), which notices one that never returns. `handler_escape.c` with an argument
/// siglongjmps out of a stack overflow twice, as gnulib's c-stack tests do: every record is then flagged, and
/// written apart, to `FILE.<pid>.incomplete`, not merged into FILE (whose other runs stay exact) —
/// the interrupted activations were counted as if nothing had happened, `recurse` as never entered (found on
/// m4's tests, where context mode reported `recurse_1` with 0 entries as exact). Without the argument its
/// handlers return: exact, with the handlers' entries by hand. In both runs the program sees what it installed
/// (its exit status checks the old actions and SA_RESETHAND's reset) and runs as without pathprof.
#[test]
fn a_signal_handler_that_does_not_return_flags_the_counts() {
    let dir = scratch("rel-handler-escape");
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, &format!("escape-{mode}"), &["handler_escape.c"], "-O2", mode, false);
        for (args, expect, escapes) in
            [(&[][..], "usr 104 escapes 0\n", false), (&["x"][..], "usr 104 escapes 2\n", true)]
        {
            let prof = dir.join(format!("{mode}-{}.pathprof", args.len()));
            let _ = std::fs::remove_file(&prof);
            let out = program(&exe, args, &dir, &prof).output().unwrap();
            assert!(out.status.success(), "{mode} {args:?}: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8_lossy(&out.stdout), expect, "{mode} {args:?}");
            let prof = written_apart(&prof, escapes);
            let show = show_json(&prof);
            let functions = show["functions"].as_array().unwrap();
            for f in functions {
                let reasons = f["inexact_reasons"].to_string();
                assert_eq!(f["exact"], !escapes, "{mode} {args:?} {}: {reasons}", f["name"]);
                assert_eq!(reasons.contains("signal handler did not return"), escapes, "{mode} {args:?}: {reasons}");
            }
            if !escapes {
                let entries = entry_counts(&show);
                assert_eq!(entries["on_usr1"], Some(4), "{mode}");
                assert_eq!(entries["on_usr2"], Some(1), "{mode}");
                assert_eq!(entries["main"], Some(1), "{mode}");
            }
        }
        // A run that escapes next to an exact profile: written apart, and `show` names its file (the profile
        // keeps its one exact run).
        let prof = dir.join(format!("{mode}-0.pathprof"));
        assert!(program(&exe, &["x"], &dir, &prof).output().unwrap().status.success(), "{mode}");
        let show = show_json(&prof);
        assert!(functions(&show).iter().all(|f| f["exact"] == true), "{mode}: {show}");
        assert_eq!(records(&prof).iter().map(|r| r.1).collect::<Vec<_>>(), vec![1], "{mode}");
        let apart = show["written_apart"].as_array().unwrap();
        assert_eq!(apart.len(), 1, "{mode}: {apart:?}");
        assert!(apart[0].as_str().unwrap().ends_with(".incomplete"), "{mode}: {apart:?}");
        let text = run_ok(Command::new(dist().join("bin/pathprof")).arg("show").arg(&prof)).stdout;
        assert!(String::from_utf8_lossy(&text).starts_with("NOTE: 1 file next to this profile holds runs"), "{mode}");
        if !matches!(mode, "edge" | "block") {
            // `decode`, the command users read paths with, names it too.
            let out = run_ok(Command::new(dist().join("bin/pathprof")).args(["decode", "--json"]).arg(&prof)).stdout;
            let decoded: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(decoded["written_apart"].as_array().map(Vec::len), Some(1), "{mode}");
            let text = run_ok(Command::new(dist().join("bin/pathprof")).arg("decode").arg(&prof)).stdout;
            assert!(String::from_utf8_lossy(&text).starts_with("NOTE: 1 file next to this profile"), "{mode}");
        }
    }
}

/// A handler that does not return after a signal its thread sent itself from a call (handler_in_libc.c):
/// `raise` from an instrumented function with a handler that siglongjmps back, `abort()` with a SIGABRT handler
/// that exits (MPFR's and libsodium's abort tests, whose runs the corpus saw written apart). Every instrumented
/// activation was at a call that may not return, so the counts are exact: merged into the profile, every
/// function exact, entries by hand, and each function's counts per source line equal to edge mode's in every
/// counting mode (before, every such run was flagged and written apart). A fault is still flagged, as it must
/// be: in instrumented code, and inside `memcpy` too, which the pass counts as a call that always returns
/// (taken for exact, its caller's entries read 0 of 2).
#[test]
fn a_handler_leaving_a_signal_raised_in_the_c_library_keeps_the_counts_exact() {
    let dir = scratch("rel-handler-libc");
    let per_line = |show: &Value| -> Vec<(String, Vec<(u64, u64)>)> {
        let mut out: Vec<(String, Vec<(u64, u64)>)> = functions(show)
            .iter()
            .map(|f| {
                let mut lines: std::collections::BTreeMap<u64, u64> = Default::default();
                for b in f["blocks"].as_array().unwrap() {
                    for l in b["lines"].as_array().unwrap() {
                        let c = lines.entry(l.as_u64().unwrap()).or_default();
                        *c = (*c).max(b["count"].as_u64().unwrap_or(0));
                    }
                }
                (f["name"].as_str().unwrap().to_string(), lines.into_iter().collect())
            })
            .collect();
        out.sort();
        out
    };
    let cases = [
        ("raise", "raise escapes 2 sum 6\n", &[("poke", 5), ("on_signal", 2), ("main", 1)][..]),
        ("memcpy", "memcpy escapes 2 sum 0\n", &[]),
        ("abort", "aborted\n", &[("fail", 1), ("on_abort", 1), ("on_signal", 0)]),
        ("fault", "fault escapes 1 sum 0\n", &[]),
    ];
    let mut edge_counts = std::collections::HashMap::new();
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, &format!("libc-{mode}"), &["handler_in_libc.c"], "-O2", mode, false);
        for (case, stdout, entries) in cases {
            let what = format!("{mode} {case}");
            let prof = dir.join(format!("{mode}-{case}.pathprof"));
            let out = program(&exe, &[case], &dir, &prof).output().unwrap();
            assert!(out.status.success(), "{what}: {:?}", out.status);
            assert_eq!(String::from_utf8_lossy(&out.stdout), stdout, "{what}");
            let flagged = matches!(case, "memcpy" | "fault");
            let show = show_json(&written_apart(&prof, flagged));
            for f in functions(&show) {
                assert_eq!(f["exact"], !flagged, "{what} {}: {}", f["name"], f["inexact_reasons"]);
            }
            if flagged {
                continue;
            }
            let got = entry_counts(&show);
            for &(name, n) in entries {
                assert_eq!(got[name], Some(n), "{what} {name}");
            }
            let lines = per_line(&show);
            match edge_counts.get(case) {
                None => {
                    edge_counts.insert(case, lines);
                }
                Some(edge) => assert_eq!(&lines, edge, "{what}: counts per line differ from edge mode's"),
            }
        }
    }
}

/// The ways a process image ends without `atexit` handlers (image_end.c; its comment derives every count):
/// a `fork()`ed child that `_exit`s, an `exec` of the program itself, an `exec` that fails, `_Exit` and
/// `quick_exit` from a callee (the latter through an `at_quick_exit` handler, after the program's own, whose
/// counts are in), `daemon` (its parent `_exit`s inside the C library: what it counted is written
/// before the call), and a signal handler that `_exit`s. The runtime writes right before each such
/// call what `exit` would have written, so every counting mode reports the exact counts (before, a fork
/// child's `_exit` lost its side of the fork, silently: tick 3 and leave 0, exact), with a run per process
/// image; a handler's `_exit` is written too, exact: the signal was raised by the tick it interrupted, at a call
/// that may not return (flagged before 2026-12-03). Trace mode
/// ends each stream there (an `exec` provisionally: a failed one goes on, and the reader takes the last end).
#[test]
fn images_that_end_without_exit_handlers_write_exact_counts() {
    let dir = scratch("image-end");
    // (case, tick entries, other function's entries, process images that wrote, handler escaped)
    type Case = (&'static str, u64, (&'static str, u64), u64, bool);
    let cases: [Case; 7] = [
        ("fork-_exit", 6, ("leave", 1), 2, false),
        ("daemon", 5, ("main", 1), 2, false),
        ("exec-self", 6, ("main", 2), 2, false),
        ("exec-fails", 5, ("main", 1), 1, false),
        ("_Exit", 4, ("leave_quietly", 1), 1, false),
        ("quick_exit", 5, ("leave_quietly", 1), 1, false),
        ("handler", 3, ("on_usr1", 1), 1, false),
    ];
    for mode in ["edge", "block", "path", "context", "piecewise"] {
        let exe = build(&dir, &format!("image-end-{mode}"), &["image_end.c"], "-O2", mode, false);
        for (how, ticks, (other, entries), runs, escaped) in cases {
            let what = format!("{mode} {how}");
            let prof = dir.join(format!("{mode}-{how}.pathprof"));
            let _ = std::fs::remove_file(&prof);
            let out = output_within(program(&exe, &[how], &dir, &prof), 60, &what);
            assert_eq!(ending(out.status), Ok(0), "{what}: {}", describe(&out));
            assert!(out.stderr.is_empty(), "{what}: {}", describe(&out));
            let prof = written_apart(&prof, escaped);
            assert_eq!(records(&prof).iter().map(|r| r.1).collect::<Vec<_>>(), vec![runs], "{what}");
            let show = show_json(&prof);
            for f in functions(&show) {
                let reasons = f["inexact_reasons"].to_string();
                assert_eq!(f["exact"], !escaped, "{what} {}: {reasons}", f["name"]);
                assert_eq!(reasons.contains("signal handler did not return"), escaped, "{what}: {reasons}");
            }
            let counts = entry_counts(&show);
            assert_eq!(counts["tick"], Some(ticks), "{what}");
            assert_eq!(counts[other], Some(entries), "{what}");
        }
    }
    // Trace mode, one file per process image (`%p`; an exec'd image keeps the pid and gets NAME.1).
    let exe = build(&dir, "image-end-trace", &["image_end.c"], "-O2", "trace", false);
    for (how, ends) in [
        ("fork-_exit", &[("complete", 3), ("cut short: the process exited inside leave", 3)][..]),
        ("exec-self", &[("cut short: the process exec'd (or became a daemon) inside main", 5), ("complete", 1)][..]),
        ("exec-fails", &[("complete", 5)][..]),
        ("_Exit", &[("cut short: the process exited inside leave_quietly", 4)][..]),
    ] {
        let sub = dir.join(format!("trace-{how}"));
        let _ = std::fs::remove_dir_all(&sub);
        std::fs::create_dir_all(&sub).unwrap();
        let mut cmd = program(&exe, &[how], &sub, &sub.join("unused.pathprof"));
        cmd.env("PATHPROF_TRACE", sub.join("t.%p.pathtrace"));
        let out = output_within(cmd, 60, how);
        assert_eq!(ending(out.status), Ok(0), "trace {how}: {}", describe(&out));
        let files: Vec<PathBuf> = std::fs::read_dir(&sub).unwrap().map(|e| e.unwrap().path()).collect();
        let mut seen: Vec<(String, u64)> = files
            .iter()
            .map(|f| {
                let text = String::from_utf8(
                    run_ok(Command::new(dist().join("bin/pathprof")).args(["trace", "--summary"]).arg(f)).stdout,
                )
                .unwrap();
                let end = text.lines().next().unwrap_or_default().split(", ").nth(1).unwrap_or_default();
                let tick = text
                    .lines()
                    .find(|l| l.starts_with("function tick "))
                    .and_then(|l| l.rsplit(": ").next()?.strip_suffix(" entries")?.parse().ok())
                    .unwrap_or(0);
                (end.split(" at block").next().unwrap_or_default().to_string(), tick)
            })
            .collect();
        seen.sort();
        let mut want: Vec<(String, u64)> = ends.iter().map(|&(e, n)| (e.to_string(), n)).collect();
        want.sort();
        assert_eq!(seen, want, "trace {how}");
    }
}

/// A program that `chdir`s away (chdir_away.c) writes its profile, and its fork child's with `%p`, where it was
/// started: relative names are resolved against the start directory, not the one the program is in at exit
/// (before, `default.pathprof` landed in the new directory — a test that works in a temporary directory it
/// then removes lost its counts with it). The same for trace files. A program that empties its environment
/// still writes to the `PATHPROF_FILE` it was started with (before: `default.pathprof`).
#[test]
fn relative_profile_names_are_resolved_against_the_start_directory() {
    let dir = scratch("chdir-away");
    let elsewhere = dir.join("elsewhere");
    for mode in ["edge", "path", "context", "trace"] {
        let exe = build(&dir, &format!("chdir-{mode}"), &["chdir_away.c"], "-O1", mode, false);
        for (name, how) in [(None, ""), (Some("out/p-%p.pathprof"), "fork"), (Some("out/p.pathprof"), "clearenv")] {
            let fork = how == "fork";
            let what = format!("{mode} {name:?} {how}");
            let start = dir.join(format!("start-{mode}-{how}"));
            let _ = std::fs::remove_dir_all(&start);
            let _ = std::fs::remove_dir_all(&elsewhere);
            std::fs::create_dir_all(start.join("out")).unwrap();
            std::fs::create_dir_all(&elsewhere).unwrap();
            let mut cmd = Command::new(&exe);
            cmd.arg(&elsewhere).args((!how.is_empty()).then_some(how)).current_dir(&start);
            for v in ["PATHPROF_FILE", "PATHPROF_TRACE", "PATHPROF_SIGNALS", "PATHPROF_DUMP_INTERVAL"] {
                cmd.env_remove(v);
            }
            let trace_name = name.map(|n| n.replace("pathprof", "pathtrace"));
            if let Some(n) = name {
                cmd.env("PATHPROF_FILE", n).env("PATHPROF_TRACE", trace_name.as_deref().unwrap());
            }
            let out = output_within(cmd, 60, &what);
            assert_eq!(ending(out.status), Ok(0), "{what}: {}", describe(&out));
            assert!(out.stderr.is_empty(), "{what}: {}", describe(&out));
            assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{what}: wrote into the new directory");
            let wrote: Vec<PathBuf> = match name {
                None => vec![start.join(if mode == "trace" { "default.pathtrace" } else { "default.pathprof" })],
                Some(_) => std::fs::read_dir(start.join("out")).unwrap().map(|e| e.unwrap().path()).collect(),
            };
            let processes = 1 + usize::from(fork);
            if mode == "trace" {
                assert_eq!(wrote.len(), processes, "{what}: {wrote:?}");
                assert!(wrote.iter().all(|f| f.exists()), "{what}: {wrote:?}");
            } else {
                let lone: Vec<&PathBuf> = wrote.iter().filter(|f| !f.to_string_lossy().ends_with(".lock")).collect();
                assert_eq!(lone.len(), processes, "{what}: {wrote:?}");
                let mut work = 0;
                for f in lone {
                    let show = show_json(f);
                    assert!(functions(&show).iter().all(|f| f["exact"] == true), "{what}: {show}");
                    work += function(&show, "work")["entry_count"].as_u64().unwrap();
                }
                assert_eq!(work, 6 + 2 * u64::from(fork), "{what}");
            }
        }
    }
}

/// `_exit` with an instrumented shared object that has its own runtime copy (plugin_exit_host.c dlopens
/// libplugin.so): the pass calls only the executable's copy before `_exit`, which finds the other copies
/// through their ELF notes (`rt/src/copies.rs`) and has each write its modules — before, the plugin's counts
/// were lost while the executable's were written. Also in a fork child. Edge, path and context mode.
#[test]
fn every_runtime_copy_writes_before_exit() {
    for mode in ["edge", "path", "context"] {
        let dir = scratch(&format!("copies-{mode}"));
        let lib = dir.join("libplugin.so");
        run_ok(
            wrapper(false)
                .args(["-O1", "-fPIC", "-shared"])
                .arg(format!("--pathprof-mode={mode}"))
                .arg(src("plugin.c"))
                .arg("-o")
                .arg(&lib),
        );
        let exe = build(&dir, "host", &["plugin_exit_host.c"], "-O1", mode, false);
        for (how, plugin_calls) in [("", 10), ("fork", 11)] {
            let what = format!("{mode} {how}");
            let prof = dir.join(format!("copies-{how}.pathprof"));
            let out = output_within(program(&exe, &[how], &dir, &prof), 60, &what);
            assert_eq!(ending(out.status), Ok(0), "{what}: {}", describe(&out));
            assert_eq!(String::from_utf8_lossy(&out.stdout), "85\n", "{what}");
            let show = show_json(&prof);
            assert!(functions(&show).iter().all(|f| f["exact"] == true), "{what}: {show}");
            let entries = entry_counts(&show);
            assert_eq!((entries["plugin_f"], entries["own"]), (Some(plugin_calls), Some(10)), "{what}");
        }
    }
}

/// A signal handler that counts a path of a table its own thread holds the lock of (here: while the table maps
/// its first array) cannot wait for the lock. Its update is parked and counted when the interrupted update
/// releases the lock: the profile is complete and g's paths are counted as in a run that calls g(7) itself.
/// gdb plays the handler (calling g(7) at that `mmap`, the runtime's own: `rt/src/own_libc.rs`), which makes the
/// interruption certain. Without a cache
/// (an atomic build's cache would take g's first updates, and the table would map its array only at exit).
#[test]
fn a_handler_update_of_a_table_its_thread_is_updating_is_counted() {
    let dir = scratch("parked-update");
    let exe = build(&dir, "parked_update", &["parked_update.c"], "-O2", "path+table", true);
    let g_paths = |profile: &Path| {
        let out = run_ok(Command::new(dist().join("bin/pathprof")).arg("decode").arg("--json").arg(profile));
        let d: Value = serde_json::from_slice(&out.stdout).expect("decode --json prints JSON");
        let mut v: Vec<(String, u64)> = d["paths"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["function"] == "g")
            .map(|p| (p["id"].to_string(), p["count"].as_u64().unwrap()))
            .collect();
        v.sort();
        v
    };
    let direct = dir.join("direct.pathprof");
    let out = program(&exe, &["extra"], &dir, &direct).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let profile = dir.join("gdb.pathprof");
    let out = Command::new("gdb")
        .args([
            "-q",
            "-batch",
            "-nx",
            "-ex",
            "break main",
            "-ex",
            "run",
            "-ex",
            "delete",
            "-ex",
            "break pathprof_libc_mmap",
        ])
        .args(["-ex", "continue", "-ex", "bt", "-ex", "delete", "-ex", "print (int)g(7)", "-ex", "continue"])
        .arg(&exe)
        .env("PATHPROF_FILE", &profile)
        .output()
        .expect("gdb runs (scripts/setup.sh installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if String::from_utf8_lossy(&out.stderr).contains("Couldn't write extended state status") {
        // gdb 13 cannot call a function of a stopped process on some CPUs (its XSAVE state write fails: also for
        // a two-line program built by plain clang), so the premise cannot be set up here.
        eprintln!("skipped: gdb cannot call functions in a stopped process on this machine");
        return;
    }
    assert!(stdout.contains("exited normally") && stdout.contains("= 20"), "{out:?}");
    // The premise: gdb stopped inside g's own table update.
    let bt = stdout.split("Breakpoint 2,").nth(1).unwrap_or_default();
    assert!(bt.contains("__pathprof_path_add") && bt.contains(" in g ("), "{stdout}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("dropped"), "{out:?}");
    assert!(records(&profile).iter().all(|(f, _)| f & RECORD_FLAG_INCOMPLETE == 0));
    let want = g_paths(&direct);
    assert_eq!(want.iter().map(|p| p.1).sum::<u64>(), 11, "{want:?}");
    assert_eq!(g_paths(&profile), want);
    let show = show_json(&profile);
    assert_eq!(function(&show, "g")["entry_count"], 11);
    assert!(functions(&show).iter().all(|f| f["exact"] == true), "{show}");
}

/// The runtime writes profiles and traces on a stack of its own; a signal that came while the thread was there
/// ran the program's handler on that stack, which the Boehm collector's suspend handler records as the thread's
/// stack pointer: the collector then scanned from it up to the thread's real stack top, across unmapped memory
/// (libgc's gctest in trace mode and threadkey_test in the LTO builds crashed in about one run of ten).
/// signal_stack.c dumps its profile 200 times and runs a branchy loop while another thread sends it SIGUSR1
/// as fast as it can; its handler counts the times its frame is off the main thread's stack: never.
#[test]
fn signal_handlers_run_on_the_programs_stack_never_the_runtimes() {
    let dir = scratch("signal-stack");
    for mode in ["edge", "path", "trace"] {
        let exe = build(&dir, &format!("prog-{mode}"), &["signal_stack.c"], "-O2", mode, false);
        let profile = dir.join(format!("{mode}.pathprof"));
        let mut cmd = program(&exe, &["200"], &dir, &profile);
        cmd.env("PATHPROF_TRACE", dir.join(format!("{mode}.pathtrace")));
        let out = wait_within(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap(), 120, mode);
        let text = String::from_utf8_lossy(&out.stdout);
        let handled: u64 = text.split_whitespace().nth(1).and_then(|n| n.trim_end_matches(',').parse().ok()).unwrap();
        assert!(handled > 0, "{mode}: {text}");
        assert!(text.contains("off the thread's stack 0\n") && out.status.success(), "{mode}: {text}");
    }
}
