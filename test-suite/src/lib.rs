//! Harness for pathprof's end-to-end tests: compile programs with the real toolchain, run them, read their
//! profiles through the `pathprof` CLI, and compare with expectations derived independently (hand-derived
//! `// expect: N` markers in the sources; clang's own `-fprofile-instr-generate` entry counts).
//!
//! The install tree comes from `scripts/build.sh` (`dist/`), or from `$PATHPROF_DIST`.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The built install tree (`dist/`); panics with instructions when it is missing, so a forgotten build fails
/// loudly instead of skipping.
pub fn dist() -> PathBuf {
    let d = std::env::var_os("PATHPROF_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist"));
    assert!(d.join("bin/pathprof-clang").exists(), "{} has no pathprof build: run scripts/build.sh", d.display());
    d
}

/// The programs that the whole-program comparisons run in every mode, one source file in [`programs()`] each:
/// one of each control-flow shape (loops, gotos, switch, recursion, exit from deep inside, loops never left,
/// longjmp, exceptions, C and C++ mixed, computed gotos, `__builtin_assume`, many paths). One list, so a program
/// added here is compared everywhere.
pub const SHAPE_PROGRAMS: &str =
    "loops.c gotos.c switch.c recursion.c exit_deep.c noexit_loop.c longjmp.c setjmp_paths.c \
    exception.cpp cxx_mix.cpp glob_match.c threaded_interp.c assume.c paths_mod.c";

/// The single-source programs `sources` (space-separated, as [`SHAPE_PROGRAMS`]) as (name, sources): a program
/// is named after its file.
pub fn single_source_programs(sources: &'static str) -> Vec<(&'static str, Vec<&'static str>)> {
    sources.split_whitespace().map(|s| (s.split('.').next().unwrap_or(s), vec![s])).collect()
}

/// The test programs' directory.
pub fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("programs")
}

/// A fresh, unique scratch directory for one test: removed when the test passes, kept when it fails (the
/// directory is named in the panic's output, for inspection). Derefs to its path.
pub fn scratch(name: &str) -> Scratch {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("work").join(format!(
        "{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    Scratch(d)
}

/// A test's scratch directory (see [`scratch`]): a test run used to leave every one behind, gigabytes a run.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Scratch {
    /// `path` (a file in this directory) with the directory kept alive as long as it is: for helpers that
    /// build and run a program in a scratch directory and hand back its profile.
    pub fn hold(self, path: PathBuf) -> InScratch {
        Rc::new(self).hold_shared(path)
    }

    /// As [`Scratch::hold`], for several files of one directory.
    pub fn hold_shared(self: &Rc<Self>, path: PathBuf) -> InScratch {
        InScratch { path, _dir: Rc::clone(self) }
    }
}

/// A file in a scratch directory that lives as long as the file's handle (see [`Scratch::hold`]). Derefs to
/// the file's path.
pub struct InScratch {
    path: PathBuf,
    _dir: Rc<Scratch>,
}

impl std::ops::Deref for InScratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<Path> for InScratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for InScratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

/// Runs a command, panicking with everything needed to debug it when it fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "command failed ({}): {cmd:?}\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// `pathprof-clang` (or `pathprof-clang++` for C++ sources), with the LLVM verifier switched on (release
/// clang passes `-disable-llvm-verifier` by default, which would hide broken instrumented IR).
pub fn wrapper(cxx: bool) -> Command {
    let name = if cxx { "pathprof-clang++" } else { "pathprof-clang" };
    let mut c = Command::new(dist().join("bin").join(name));
    c.arg("-fverify-intermediate-code");
    c
}

/// `pathprof show --json FILE`, parsed.
pub fn show_json(profile: &Path) -> Value {
    let out = run_ok(Command::new(dist().join("bin/pathprof")).arg("show").arg("--json").arg(profile));
    serde_json::from_slice(&out.stdout).expect("show --json prints JSON")
}

/// What a marker counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Measure {
    /// `// expect: N`: how often the line's block was entered.
    Entered,
    /// `// expect-out: N`: how often the line's block was left normally (entered minus abnormal departures):
    /// for a statement that follows a call which may not return, in the same block.
    LeftNormally,
}

/// `// expect: N` / `// expect-out: N` markers of a source file: line number → (measure, expected count).
pub fn expectations(source: &Path) -> BTreeMap<u32, (Measure, u64)> {
    let text = std::fs::read_to_string(source).expect("read source");
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        for (tag, measure) in [("// expect: ", Measure::Entered), ("// expect-out: ", Measure::LeftNormally)] {
            if let Some(pos) = line.find(tag) {
                let n: u64 = line[pos + tag.len()..].trim().parse().expect("expect marker is a number");
                m.insert(i as u32 + 1, (measure, n));
            }
        }
    }
    m
}

/// For every marker line of `source`: the highest count (entered, or left normally) among the blocks of
/// functions from that file whose lines include it. A statement on its own line has its own block, so that is
/// the statement's count.
pub fn marker_counts(show: &Value, source: &Path) -> BTreeMap<u32, Option<u64>> {
    let file = source.file_name().and_then(|f| f.to_str()).expect("file name");
    let mut out = BTreeMap::new();
    for (&line, &(measure, _)) in &expectations(source) {
        let mut best: Option<u64> = None;
        for f in show["functions"].as_array().expect("functions") {
            let ffile = f["file"].as_str().unwrap_or("");
            if !ffile.ends_with(file) {
                continue;
            }
            let abnormal = |block: &serde_json::Value| -> u64 {
                f["abnormal_exits"]
                    .as_array()
                    .map(|a| a.iter().filter(|x| x["block"] == *block).filter_map(|x| x["count"].as_u64()).sum())
                    .unwrap_or(0)
            };
            for b in f["blocks"].as_array().expect("blocks") {
                let has = b["lines"].as_array().expect("lines").iter().any(|l| l.as_u64() == Some(line as u64));
                if has {
                    let c = match measure {
                        Measure::Entered => b["count"].as_u64(),
                        Measure::LeftNormally => b["count"].as_u64().map(|c| c - abnormal(&b["id"])),
                    };
                    best = match (best, c) {
                        (Some(x), Some(y)) => Some(x.max(y)),
                        (None, c) => c,
                        (b, None) => b,
                    };
                }
            }
        }
        out.insert(line, best);
    }
    out
}

/// Asserts every `// expect: N` marker of `source` against the profile.
pub fn assert_markers(show: &Value, source: &Path) {
    let expected = expectations(source);
    assert!(!expected.is_empty(), "{} has no expect markers", source.display());
    let got = marker_counts(show, source);
    for (line, (measure, want)) in expected {
        assert_eq!(got[&line], Some(want), "{}:{line}: expected {measure:?} count {want}", source.display());
    }
}

/// Entry count per function name from `pathprof show --json`.
pub fn entry_counts(show: &Value) -> BTreeMap<String, Option<u64>> {
    show["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| (f["name"].as_str().expect("name").to_string(), f["entry_count"].as_u64()))
        .collect()
}

/// A second, independent method: clang's own front-end instrumentation (`-fprofile-instr-generate`) run on
/// the same program and read back with `llvm-profdata-19 show`. Returns function name → entry count.
pub fn clang_entry_counts(dir: &Path, sources: &[PathBuf], cxx: bool, extra: &[&str]) -> BTreeMap<String, u64> {
    let exe = dir.join("clang-profiled");
    let raw = dir.join("clang.profraw");
    let data = dir.join("clang.profdata");
    let cc = if cxx { "clang++-19" } else { "clang-19" };
    run_ok(Command::new(cc).arg("-O0").arg("-fprofile-instr-generate").args(sources).args(extra).arg("-o").arg(&exe));
    let status = Command::new(&exe).env("LLVM_PROFILE_FILE", &raw).status().expect("run clang-profiled");
    let _ = status; // programs may exit non-zero on purpose; the profile is written anyway
    run_ok(Command::new("llvm-profdata-19").arg("merge").arg("-o").arg(&data).arg(&raw));
    let out = run_ok(Command::new("llvm-profdata-19").args(["show", "--all-functions"]).arg(&data));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut m = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if !line.starts_with(' ') && t.ends_with(':') {
            // "  name:" lines are indented by two spaces in llvm-profdata 19; accept both.
        }
        if let Some(name) = t.strip_suffix(':') {
            if !t.contains(' ') {
                // Local functions are "file.c;name" or "file.cpp:name" (no mangled name contains ':' or ';').
                current = Some(name.rsplit([';', ':']).next().unwrap_or(name).to_string());
                continue;
            }
        }
        if let Some(rest) = t.strip_prefix("Function count: ") {
            if let Some(name) = current.take() {
                m.insert(name, rest.trim().parse().expect("count"));
            }
        }
    }
    m
}

/// Whether a decoded path (`pathprof decode --json`) runs through a block holding source line `line`.
pub fn path_runs_through(path: &Value, line: u64) -> bool {
    path["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .any(|s| s["lines"].as_array().expect("lines").iter().any(|l| l.as_u64() == Some(line)))
}

/// The key tests add decoded path counts up under: the path's start and end kinds (`entry`, `loop_header`, …;
/// `exit`, `back_edge`, …) and, for each of `lines`, whether the path runs through it.
pub fn path_key(path: &Value, lines: &[u64]) -> (String, String, Vec<bool>) {
    let kind = |k: &str| path[k].as_str().expect("start/end kind").to_string();
    (kind("start"), kind("end"), lines.iter().map(|&l| path_runs_through(path, l)).collect())
}

/// One thread of `pathprof trace --json`: its steps in order, as (function, block).
pub fn trace_steps(thread: &Value) -> Vec<(String, u64)> {
    thread["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| (s["function"].as_str().expect("function").to_string(), s["block"].as_u64().expect("block")))
        .collect()
}
