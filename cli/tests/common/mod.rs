//! Shared fixtures of the decode, export and hot-region tests: synthetic path profiles produced by simulating
//! executions through core's DAG and numbering exactly as the pass instruments them, edge-mode functions with
//! a counter on every edge but EXIT→entry, and a harness that runs the `pathprof` binary.
#![allow(dead_code)]

use pathprof_core::dag::DEFAULT_PATH_BUDGET;
pub use pathprof_core::fixtures::simulate;
use pathprof_core::fixtures::{lecture_cfg, lecture_events, loop_diamond_cfg, setjmp_cfg, setjmp_events};
use pathprof_core::graph::test_cfg;
use pathprof_core::Cfg;
use pathprof_format::meta::{FunctionMeta, Mode, PathStorage};
use pathprof_format::profile::{self, ModuleProfile, Profile};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

#[path = "../../../format/tests/support/metadata.rs"]
pub mod metadata;

// ---------------------------------------------------------------------------------------------------------------
// Path-mode fixtures (as in decode.rs)

pub struct Fixture {
    pub meta: FunctionMeta,
    pub counts: BTreeMap<u128, i64>,
}

pub fn fixture(
    name: &str,
    cfg: Cfg,
    budget: u128,
    storage: PathStorage,
    lines: &[&[u32]],
    events: &[(i64, Vec<u32>)],
) -> Fixture {
    let counts = simulate(&cfg, budget, events);
    let meta =
        metadata::path_function(name, "demo.c", cfg, budget, storage, |b| lines.get(b).map_or(vec![], |l| l.to_vec()));
    Fixture { meta, counts }
}

pub fn module(name: &str, functions: Vec<Fixture>) -> ModuleProfile {
    metadata::path_module(name, functions.into_iter().map(|f| (f.meta, f.counts)).collect())
}

pub const BIG: u128 = DEFAULT_PATH_BUDGET;

/// The BL96 lecture graph A..F (notes C.2): e0 A→C, e1 A→B, e2 B→C, e3 B→D, e4 C→D, e5 D→F, e6 D→E, e7 E→F,
/// e8 F→EXIT. Paths ACDF 0, ACDEF 1, ABCDF 2, ABCDEF 3, ABDF 4, ABDEF 5. 11 calls: ABDEF ×7, ACDF ×3, ABCDF ×1.
/// Instrumented edges as in notes C.4.
pub fn lecture(name: &str, executed: bool) -> Fixture {
    let cfg = lecture_cfg();
    let events = if executed { lecture_events() } else { vec![] };
    let lines: [&[u32]; 6] = [&[10, 11], &[12], &[13, 14, 15], &[16], &[17, 19], &[20]];
    let mut f = fixture(name, cfg, BIG, PathStorage::Dense, &lines, &events);
    f.meta.display_name = format!("{name}(int)");
    f.meta.path.as_mut().unwrap().instrumented_edges = vec![0, 2, 3, 5, 7];
    f
}

/// Loop around a diamond: e0 0→1, e1 1→2, e2 1→3, e3 2→4, e4 3→4, e5 4→1 (back edge), e6 4→5, e7 5→EXIT.
/// Paths: 0 [0 1 2 4 5], 1 [0 1 2 4]↺, 2 [0 1 3 4 5], 3 [0 1 3 4]↺, 4 ↻[1 2 4 5], 5 ↻[1 2 4]↺, 6 ↻[1 3 4 5],
/// 7 ↻[1 3 4]↺ (↻ starts at header bb1, ↺ ends at back edge bb4->bb1). Two calls iterating via bb2 bb2 bb3 bb2
/// and bb3 bb2 bb2 bb2: paths 1 5 7 4 and 3 5 5 4, so 5: 3, 4: 2, 1: 1, 3: 1, 7: 1.
pub fn loop_diamond(name: &str, storage: PathStorage, with_lines: bool) -> Fixture {
    let cfg = loop_diamond_cfg();
    let events =
        vec![(1, vec![0, 1, 3, 5, 1, 3, 5, 2, 4, 5, 1, 3, 6, 7]), (1, vec![0, 2, 4, 5, 1, 3, 5, 1, 3, 5, 1, 3, 6, 7])];
    let lines: Vec<Vec<u32>> = (0..6).map(|b| if with_lines { vec![30 + b] } else { vec![] }).collect();
    let lines: Vec<&[u32]> = lines.iter().map(Vec::as_slice).collect();
    fixture(name, cfg, BIG, storage, &lines, &events)
}

/// The shared setjmp function (`pathprof_core::fixtures::setjmp_cfg`, bb1 a re-entry block) with lines 40–43,
/// run by `setjmp_events`: net 0: 3, 1: 2, 2: 2, 3: −2.
pub fn uses_setjmp() -> Fixture {
    let cfg = setjmp_cfg();
    let events = setjmp_events();
    let lines: [&[u32]; 4] = [&[40], &[41], &[42], &[43]];
    let mut f = fixture("uses_setjmp", cfg, BIG, PathStorage::Dense, &lines, &events);
    f.meta.reentry_blocks = vec![1];
    f
}

/// `k` sequential diamonds: edges 4i..4i+3 are h→h+1, h→h+2, h+1→h+3, h+2→h+3 (h = 3i), then e(4k) returns.
pub fn diamonds_cfg(k: u32) -> Cfg {
    let mut edges = Vec::new();
    for i in 0..k {
        let h = 3 * i;
        edges.extend([(h, h + 1), (h, h + 2), (h + 1, h + 3), (h + 2, h + 3)]);
    }
    test_cfg(3 * k + 1, &edges, &[3 * k])
}

/// Four diamonds cut to a budget of 12: bb3 is cut (its out-edges e4, e5 end one path and start the next).
/// ENTRY's successors: e0 (Val 0), e1 (2), SplitEntry e4 (4), SplitEntry e5 (8). 5 calls take every first
/// branch: [0 1 3] ending at the cut bb3->bb4 (path 0) and [4 6 7 9 10 12] after it (path 4); 2 calls every
/// second branch: [0 2 3] (path 2 + 1 = 3) and [5 6 8 9 11 12] (8 + 2 + 1 = 11).
pub fn diamonds() -> Fixture {
    let events = vec![(5, vec![0, 2, 4, 6, 8, 10, 12, 14, 16]), (2, vec![1, 3, 5, 7, 9, 11, 13, 15, 16])];
    let lines: Vec<Vec<u32>> = (0..13).map(|b| vec![50 + b]).collect();
    let lines: Vec<&[u32]> = lines.iter().map(Vec::as_slice).collect();
    fixture("diamonds", diamonds_cfg(4), 12, PathStorage::Dense, &lines, &events)
}

/// 70 diamonds, uncut (budget 2^128 − 1): 2^70 paths, hashed. Taking every second branch is path
/// Σ 2^(69−i) = 2^70 − 1, beyond u64; every first branch is path 0.
pub fn wide() -> Fixture {
    let second: Vec<u32> = (0..70).flat_map(|i| [4 * i + 1, 4 * i + 3]).chain([280]).collect();
    let first: Vec<u32> = (0..70).flat_map(|i| [4 * i, 4 * i + 2]).chain([280]).collect();
    fixture("wide", diamonds_cfg(70), u128::MAX, PathStorage::Hashed { table: 1 }, &[], &[(2, second), (1, first)])
}

/// The demo module, in function order: lecture, loop_diamond, uses_setjmp, diamonds, hashed_loop (no line
/// info), never_called, wide.
pub fn demo() -> Profile {
    Profile { modules: vec![module("demo.c", demo_functions())] }
}

/// The functions of [`demo`], in order.
pub fn demo_functions() -> Vec<Fixture> {
    vec![
        lecture("lecture", true),
        loop_diamond("loop_diamond", PathStorage::Dense, true),
        uses_setjmp(),
        diamonds(),
        loop_diamond("hashed_loop", PathStorage::Hashed { table: 0 }, false),
        lecture("never_called", false),
        wide(),
    ]
}

// ---------------------------------------------------------------------------------------------------------------
// Edge-mode fixtures

/// An edge-mode function on `cfg` whose every edge but EXIT→entry carries a counter, with the given counts of
/// those edges (EdgeId order, EXIT→entry excluded), the given lines per block, file `file` and start line 9.
pub fn edge_function(name: &str, file: &str, cfg: Cfg, lines: &[&[u32]]) -> FunctionMeta {
    let n = cfg.num_edges() - 1;
    let edge_counters = (0..cfg.num_edges()).map(|e| (e < n).then_some(e as u32)).collect();
    assert_eq!(cfg.exit_to_entry().index(), n, "EXIT->entry is the last edge");
    let f = metadata::function_meta(name, file, cfg, |b| lines.get(b).map_or(vec![], |l| l.to_vec()));
    FunctionMeta { edge_counters, num_counters: n as u32, ..f }
}

/// An edge-mode module of `(function, counts of its measured edges)`, counters laid out in function order.
pub fn edge_module(name: &str, functions: Vec<(FunctionMeta, Vec<u64>)>, flags: u64) -> ModuleProfile {
    let mut counters = Vec::new();
    let mut metas = Vec::new();
    for (mut f, counts) in functions {
        assert_eq!(counts.len(), f.num_counters as usize);
        f.counter_base = counters.len() as u64;
        counters.extend(counts);
        metas.push(f);
    }
    ModuleProfile::new(metadata::module_meta(name, Mode::Edge, metas), counters, vec![], flags, 1)
}

/// The loop around a diamond of [`loop_diamond`] in edge mode, run the same way: 2 calls, 8 iterations (6 via
/// bb2); edge counts e0..e7 = 2, 6, 2, 6, 2, 6, 2, 2; blocks 2, 8, 6, 2, 8, 2.
pub fn edge_loop_diamond(name: &str, file: &str, lines: &[&[u32]]) -> (FunctionMeta, Vec<u64>) {
    let cfg = loop_diamond_cfg();
    (edge_function(name, file, cfg, lines), vec![2, 6, 2, 6, 2, 6, 2, 2])
}

// ---------------------------------------------------------------------------------------------------------------
// Harness

pub struct Dir(tempfile::TempDir);

impl Dir {
    pub fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
    pub fn write_profile(&self, name: &str, p: &Profile) -> PathBuf {
        self.write(name, &profile::write(p))
    }
    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
    /// The names in the directory, sorted.
    pub fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(self.0.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }
}

pub fn pathprof(args: &[&dyn AsRef<OsStr>]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pathprof"));
    for a in args {
        cmd.arg(a);
    }
    cmd.output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

pub fn ok(args: &[&dyn AsRef<OsStr>]) -> String {
    let o = pathprof(args);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "");
    stdout(&o)
}

pub fn json(args: &[&dyn AsRef<OsStr>]) -> Value {
    serde_json::from_str(&ok(args)).unwrap()
}

/// Exit status 2, nothing on stdout, exactly one `pathprof: error: ` line on stderr containing `needle`.
pub fn assert_one_line_error(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr:\n{err}");
    assert_eq!(stdout(o), "");
    assert_eq!(err.lines().count(), 1, "not one line:\n{err}");
    assert!(err.ends_with('\n'));
    assert!(err.starts_with("pathprof: error: "), "{err}");
    assert!(err.contains(needle), "{err:?} does not contain {needle:?}");
}
