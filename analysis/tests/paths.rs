//! Path-mode profiles: regeneration of executed paths, counts derived from them, exactness, corrupt path data,
//! and wrapping merges, on synthetic modules.
//!
//! Path counts are produced by simulating executions through core's DAG and numbering exactly as the pass
//! instruments them (a path is counted when it reaches EXIT or takes a back or cut edge); every expected value
//! below is derived by hand from the executions each fixture describes.

use pathprof_analysis::{function_edge_counts, function_path_counts, AnalysisError, InexactReason};
use pathprof_core::dag::PathDag;
use pathprof_core::dfs::depth_first;
use pathprof_core::fixtures::{lecture_cfg, lecture_events, loop_diamond_cfg, setjmp_cfg, setjmp_events, simulate};
use pathprof_core::graph::test_cfg;
use pathprof_core::numbering::Numbering;
use pathprof_core::regenerate::{PathEnd, PathStart};
use pathprof_core::{BlockId, Cfg, EdgeId, EdgeKind};
use pathprof_format::layout::{self, FILE_HEADER_LEN};
use pathprof_format::meta::{FunctionMeta, Mode, PathStorage};
use pathprof_format::profile::{merge, read, write, ModuleProfile, Profile, SparseEntry};
use proptest::prelude::*;
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------------------------
// Simulation and fixtures

#[path = "../../format/tests/support/metadata.rs"]
mod metadata;
use metadata::path_module as module;

const BIG: u128 = pathprof_core::dag::DEFAULT_PATH_BUDGET;

fn dag_for(cfg: &Cfg, budget: u128) -> (PathDag, Numbering) {
    let adj = cfg.adjacency();
    let dag = PathDag::build_with_budget(cfg, &adj, &depth_first(cfg, &adj), budget).unwrap();
    let n = Numbering::compute(&dag).unwrap();
    (dag, n)
}

/// A path-mode function of file `p.c`, block b on line 10 + b; `counter_base` and `num_counters` are set by
/// [`module`].
fn function(name: &str, cfg: Cfg, budget: u128, storage: PathStorage, instrumented: Vec<u32>) -> FunctionMeta {
    let mut f = metadata::path_function(name, "p.c", cfg, budget, storage, |b| vec![10 + b as u32]);
    f.display_name = format!("{name}()");
    f.path.as_mut().unwrap().instrumented_edges = instrumented;
    f
}

const A: u32 = 0;
const B: u32 = 1;
const C: u32 = 2;
const D: u32 = 3;
const E: u32 = 4;
const F: u32 = 5;

/// The lecture graph (`pathprof_core::fixtures::lecture_cfg`), 11 calls: ABDEF ×7, ACDF ×3, ABCDF ×1.
fn lecture() -> (FunctionMeta, BTreeMap<u128, i64>) {
    let cfg = lecture_cfg();
    let counts = simulate(&cfg, BIG, &lecture_events());
    (function("lecture", cfg, BIG, PathStorage::Dense, vec![0, 2, 3, 5, 7]), counts)
}

/// Two calls: iterations via bb2, bb2, bb3, bb2 and via bb3, bb2, bb2, bb2: paths 1, 5, 7, 4 and 3, 5, 5, 4.
fn loop_events() -> Vec<(i64, Vec<u32>)> {
    vec![(1, vec![0, 1, 3, 5, 1, 3, 5, 2, 4, 5, 1, 3, 6, 7]), (1, vec![0, 2, 4, 5, 1, 3, 5, 1, 3, 5, 1, 3, 6, 7])]
}

fn loop_diamond(storage: PathStorage) -> (FunctionMeta, BTreeMap<u128, i64>) {
    let cfg = loop_diamond_cfg();
    let counts = simulate(&cfg, BIG, &loop_events());
    (function("loop_diamond", cfg, BIG, storage, vec![2, 5, 6]), counts)
}

/// bb1 calls setjmp (a re-entry block, Termination e5); bb2 calls a function that may longjmp (Termination e6).
/// The shared setjmp function ([`setjmp_cfg`]) run by [`setjmp_events`]: net counts 0: 3, 1: 2, 2: 2, 3: −2.
fn uses_setjmp(reentry: bool) -> (FunctionMeta, BTreeMap<u128, i64>) {
    let cfg = setjmp_cfg();
    let counts = simulate(&cfg, BIG, &setjmp_events());
    let mut f = function("uses_setjmp", cfg, BIG, PathStorage::Dense, vec![1, 2, 4]);
    if reentry {
        f.reentry_blocks = vec![1];
    }
    (f, counts)
}

/// Four sequential diamonds (heads 0, 3, 6, 9, 12; 16 paths) cut to a budget of 12: the threshold pass cuts
/// bb3 (NumPaths 8 > 6), leaving 2 + 2 + 4 + 4 = 12 paths. Edges 4i..4i+3 of diamond i: h→h+1, h→h+2, h+1→h+3,
/// h+2→h+3 (h = 3i); e16 12→EXIT, e17 EXIT→0. 5 calls take every first branch, 2 every second.
fn diamonds_cfg() -> Cfg {
    let mut edges = Vec::new();
    for i in 0..4 {
        let h = 3 * i;
        edges.extend([(h, h + 1), (h, h + 2), (h + 1, h + 3), (h + 2, h + 3)]);
    }
    test_cfg(13, &edges, &[12])
}

fn diamonds() -> (FunctionMeta, BTreeMap<u128, i64>) {
    let cfg = diamonds_cfg();
    let events = vec![(5, vec![0, 2, 4, 6, 8, 10, 12, 14, 16]), (2, vec![1, 3, 5, 7, 9, 11, 13, 15, 16])];
    let counts = simulate(&cfg, 12, &events);
    (function("diamonds", cfg, 12, PathStorage::Dense, vec![]), counts)
}

fn blocks(v: &[u32]) -> Vec<BlockId> {
    v.iter().map(|&b| BlockId(b)).collect()
}

fn some(v: &[u64]) -> Vec<Option<u64>> {
    v.iter().map(|&x| Some(x)).collect()
}

/// (number, count) of every executed path, by number.
fn numbers_and_counts(m: &ModuleProfile, f: usize) -> Vec<(u128, i64)> {
    function_path_counts(m, f).unwrap().paths.iter().map(|p| (p.number, p.count)).collect()
}

// ---------------------------------------------------------------------------------------------------------------
// Regeneration and derived counts

#[test]
fn lecture_paths_and_counts() {
    let m = module("p.c", vec![lecture()]);
    let fp = function_path_counts(&m, 0).unwrap();
    assert_eq!(fp.num_paths, 6);
    assert_eq!(fp.total, 11);
    let got: Vec<(u128, i64, Vec<BlockId>)> =
        fp.paths.iter().map(|p| (p.number, p.count, p.path.blocks.clone())).collect();
    assert_eq!(
        got,
        vec![(0, 3, blocks(&[A, C, D, F])), (2, 1, blocks(&[A, B, C, D, F])), (5, 7, blocks(&[A, B, D, E, F])),]
    );
    let p5 = &fp.paths[2];
    assert_eq!(p5.path.start, PathStart::Entry);
    assert_eq!(p5.path.end, PathEnd::Exit { edge: EdgeId(8) });
    assert_eq!(p5.path.edges, [1, 3, 6, 7, 8].map(EdgeId));
    assert!(!p5.abnormal && !p5.reentry);
    let hot: Vec<u128> = fp.hottest_first().iter().map(|p| p.number).collect();
    assert_eq!(hot, [5, 0, 2]);

    let c = &fp.counts;
    assert!(c.exact, "{:?}", c.inexact_reasons);
    assert_eq!(c.edges, some(&[3, 8, 1, 7, 4, 4, 7, 7, 11, 11]));
    assert_eq!(c.raw_edges, vec![3, 8, 1, 7, 4, 4, 7, 7, 11, 11]);
    assert_eq!(c.blocks, some(&[11, 8, 4, 11, 7, 11]));
    assert_eq!(c.entry, Some(11));
    assert_eq!(c.measured, [true, false, true, true, false, true, false, true, false, false]);
    // function_edge_counts gives the same counts for a path-mode module.
    assert_eq!(function_edge_counts(&m, 0).unwrap(), fp.counts);
}

#[test]
fn loop_paths_start_at_the_header_and_end_at_the_back_edge() {
    let m = module("p.c", vec![loop_diamond(PathStorage::Dense)]);
    assert_eq!(numbers_and_counts(&m, 0), [(1, 1), (3, 1), (4, 2), (5, 3), (7, 1)]);
    let fp = function_path_counts(&m, 0).unwrap();
    assert_eq!(fp.num_paths, 8);
    assert_eq!(fp.total, 8);
    let hot: Vec<(u128, i64)> = fp.hottest_first().iter().map(|p| (p.number, p.count)).collect();
    assert_eq!(hot, [(5, 3), (4, 2), (1, 1), (3, 1), (7, 1)], "hottest first, ties by path number");
    let by = |r: u128| fp.paths.iter().find(|p| p.number == r).unwrap();
    // 1: [0 1 2 4] from the entry to the back edge.
    assert_eq!(by(1).path.start, PathStart::Entry);
    assert_eq!(by(1).path.end, PathEnd::BackEdge { back: EdgeId(5) });
    assert_eq!(by(1).path.blocks, blocks(&[0, 1, 2, 4]));
    assert_eq!(by(1).path.edges, [0, 1, 3].map(EdgeId));
    // 5: [1 2 4] from the header to the back edge; 4: [1 2 4 5] from the header to the return.
    assert_eq!(by(5).path.start, PathStart::LoopHeader { back: EdgeId(5) });
    assert_eq!(by(5).path.end, PathEnd::BackEdge { back: EdgeId(5) });
    assert_eq!(by(5).path.blocks, blocks(&[1, 2, 4]));
    assert_eq!(by(4).path.start, PathStart::LoopHeader { back: EdgeId(5) });
    assert_eq!(by(4).path.end, PathEnd::Exit { edge: EdgeId(7) });
    assert_eq!(by(4).path.blocks, blocks(&[1, 2, 4, 5]));
    assert_eq!(by(7).path.blocks, blocks(&[1, 3, 4]));

    // 8 iterations: e1 = 6, e2 = 2, back edge e5 = 6.
    let c = &fp.counts;
    assert!(c.exact, "{:?}", c.inexact_reasons);
    assert_eq!(c.edges, some(&[2, 6, 2, 6, 2, 6, 2, 2, 2]));
    assert_eq!(c.blocks, some(&[2, 8, 6, 2, 8, 2]));
    assert_eq!(c.entry, Some(2));
    assert_eq!(c.measured, [false, false, true, false, false, true, true, false, false]);
}

#[test]
fn hashed_functions_sum_their_sparse_entries() {
    let (f, counts) = loop_diamond(PathStorage::Hashed { table: 0 });
    let mut m = module("p.c", vec![lecture(), (f, counts)]);
    // Split path 5's count over two entries, add a zero entry and a pair that cancels (+1, −1 as u64).
    let five = m.sparse.iter().position(|s| s.path == 5).unwrap();
    m.sparse[five].count = 2;
    m.sparse.extend([
        SparseEntry { function: 1, path: 5, count: 1 },
        SparseEntry { function: 1, path: 6, count: 0 },
        SparseEntry { function: 1, path: 2, count: 1 },
        SparseEntry { function: 1, path: 2, count: u64::MAX },
    ]);
    let m = read(&write(&Profile { modules: vec![m] })).unwrap().modules.remove(0);
    assert_eq!(m.meta.functions[1].num_counters, 0);
    assert_eq!(numbers_and_counts(&m, 1), [(1, 1), (3, 1), (4, 2), (5, 3), (7, 1)]);
    let c = function_edge_counts(&m, 1).unwrap();
    assert!(c.exact);
    assert_eq!(c.edges, some(&[2, 6, 2, 6, 2, 6, 2, 2, 2]));
    assert_eq!(c.blocks, some(&[2, 8, 6, 2, 8, 2]));
    // The dense function next to it is unaffected.
    assert_eq!(numbers_and_counts(&m, 0), [(0, 3), (2, 1), (5, 7)]);
}

#[test]
fn setjmp_reentry_corrections_keep_the_counts_exact() {
    let m = module("s.c", vec![uses_setjmp(true)]);
    let m = read(&write(&Profile { modules: vec![m] })).unwrap().modules.remove(0);
    // Path 3's −2 is stored as the two's complement 2^64 − 2.
    assert_eq!(m.counters, vec![3, 2, 2, u64::MAX - 1]);
    let fp = function_path_counts(&m, 0).unwrap();
    assert_eq!(fp.paths.iter().map(|p| (p.number, p.count)).collect::<Vec<_>>(), [(0, 3), (1, 2), (2, 2), (3, -2)]);
    assert_eq!(fp.total, 5);
    let p1 = &fp.paths[1];
    assert!(p1.abnormal && !p1.reentry && !p1.is_reentry_correction());
    assert_eq!(p1.path.blocks, blocks(&[0, 1, 2]));
    assert_eq!(p1.path.end, PathEnd::Exit { edge: EdgeId(6) });
    let p3 = &fp.paths[3];
    assert!(p3.abnormal && p3.reentry && p3.is_reentry_correction());
    assert_eq!(p3.path.blocks, blocks(&[0, 1]));
    assert_eq!(p3.last_block(), Some(BlockId(1)));
    assert_eq!(fp.hottest_first().last().unwrap().number, 3);

    // 5 calls, all through bb1; 5 went on to bb2 (2 of them longjmp'd out of it), 2 re-entered bb1 and went to
    // bb3 directly; the setjmp block's Termination edge nets −2 (re-entries), like edge mode's.
    let c = &fp.counts;
    assert!(c.exact, "{:?}", c.inexact_reasons);
    assert_eq!(c.raw_edges, vec![5, 5, 2, 3, 5, -2, 2, 5]);
    assert_eq!(c.edges, [Some(5), Some(5), Some(2), Some(3), Some(5), None, Some(2), Some(5)]);
    assert_eq!(c.blocks, some(&[5, 5, 5, 5]));
    assert_eq!(c.entry, Some(5));
    // Every real (branch and return) edge is non-negative.
    let cfg = &m.meta.functions[0].cfg;
    for (e, v) in cfg.edges().iter().zip(&c.raw_edges) {
        if matches!(e.kind, EdgeKind::Branch { .. } | EdgeKind::Return) {
            assert!(*v >= 0);
        }
    }
}

/// Metadata version 3 counts a truncated path on every arrival at its block, with no −1 once the call has
/// returned: the same executions as in `setjmp_events` arrive 5 times at bb1 (path 3) and at bb2 (path 1). The
/// reader nets them, after a write/read round trip, to exactly the counts of the +1/−1 profile.
#[test]
fn arrival_counts_read_as_the_net_counts_of_the_same_executions() {
    let (f, net) = uses_setjmp(true);
    let retracting = module("s.c", vec![(f.clone(), net)]);
    let arriving = module("s.c", vec![(f, BTreeMap::from([(0, 3), (1, 5), (2, 2), (3, 5)]))]);
    let mut meta = arriving.meta.clone();
    meta.path_arrivals = true;
    let arriving = ModuleProfile::new(meta, arriving.counters.clone(), arriving.sparse.clone(), 0, 1);
    let arriving = read(&write(&Profile { modules: vec![arriving] })).unwrap().modules.remove(0);
    assert!(arriving.meta.path_arrivals);
    assert_eq!(arriving.counters, vec![3, 5, 2, 5]);
    assert_eq!(numbers_and_counts(&arriving, 0), [(0, 3), (1, 2), (2, 2), (3, -2)]);
    assert_eq!(function_path_counts(&arriving, 0).unwrap(), function_path_counts(&retracting, 0).unwrap());
}

#[test]
fn negative_paths_outside_reentry_blocks_are_inexact() {
    // Without the re-entry mark, path 3's −2 is unexplained.
    let m = module("s.c", vec![uses_setjmp(false)]);
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(c.inexact_reasons[0], InexactReason::NegativePath { path: 3, count: -2 });
    assert_eq!(c.inexact_reasons[0].to_string(), "path 3 counted a negative number of times");
    assert!(c.inexact_reasons.contains(&InexactReason::NegativeEdge {
        edge: EdgeId(5),
        from: BlockId(1),
        to: BlockId(4),
        value: -2
    }));
    // A negative count on a path that returns is never legitimate, re-entry block or not: path 0 at −4 makes
    // bb2→bb3 (e3) derive to −4 and bb3 to −2.
    let (f, mut counts) = uses_setjmp(true);
    counts.insert(0, -4);
    let m = module("s.c", vec![(f, counts)]);
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(c.inexact_reasons[0], InexactReason::NegativePath { path: 0, count: -4 });
    assert_eq!(c.raw_edges[3], -4);
    assert_eq!(c.edges[3], None);
    assert_eq!(c.blocks[3], None);
}

#[test]
fn unbalanced_segments_violate_conservation() {
    // Path 4 (header → return) counted once more than the executions explain: bb1 is entered 8 times but left
    // 9 times, and EXIT is reached 3 times by 2 invocations.
    let (f, mut counts) = loop_diamond(PathStorage::Dense);
    counts.insert(4, 3);
    let m = module("p.c", vec![(f, counts)]);
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert!(c.inexact_reasons.contains(&InexactReason::ConservationViolation { block: BlockId(1) }));
    assert!(c.inexact_reasons.contains(&InexactReason::ConservationViolation { block: BlockId(6) }));
    // Every count is still a (non-negative) number: only the verdict says they cannot all be right.
    assert!(c.edges.iter().all(Option::is_some));
}

#[test]
fn cut_paths_start_and_end_at_the_cut() {
    let (f, counts) = diamonds();
    let (dag, _) = dag_for(&f.cfg, 12);
    assert_eq!(dag.cut_vertices(), [BlockId(3)], "fixture: the budget cuts bb3");
    assert_eq!(f.path.as_ref().unwrap().num_paths, 12);
    let m = module("d.c", vec![(f, counts)]);
    let fp = function_path_counts(&m, 0).unwrap();
    let mut got: Vec<(i64, PathStart, PathEnd, Vec<BlockId>)> =
        fp.paths.iter().map(|p| (p.count, p.path.start, p.path.end, p.path.blocks.clone())).collect();
    got.sort_by_key(|g| g.3.clone());
    assert_eq!(
        got,
        vec![
            (5, PathStart::Entry, PathEnd::Cut { edge: EdgeId(4) }, blocks(&[0, 1, 3])),
            (2, PathStart::Entry, PathEnd::Cut { edge: EdgeId(5) }, blocks(&[0, 2, 3])),
            (
                5,
                PathStart::AfterCut { edge: EdgeId(4) },
                PathEnd::Exit { edge: EdgeId(16) },
                blocks(&[4, 6, 7, 9, 10, 12])
            ),
            (
                2,
                PathStart::AfterCut { edge: EdgeId(5) },
                PathEnd::Exit { edge: EdgeId(16) },
                blocks(&[5, 6, 8, 9, 11, 12])
            ),
        ]
    );
    let c = &fp.counts;
    assert!(c.exact, "{:?}", c.inexact_reasons);
    assert_eq!(c.edges, some(&[5, 2, 5, 2, 5, 2, 5, 2, 5, 2, 5, 2, 5, 2, 5, 2, 7, 7]));
    assert_eq!(c.blocks, some(&[7, 5, 2, 7, 5, 2, 7, 5, 2, 7, 5, 2, 7]));
    assert_eq!(c.entry, Some(7));
}

#[test]
fn never_executed_path_function_has_zero_counts() {
    let (f, _) = lecture();
    let m = module("p.c", vec![(f, BTreeMap::new())]);
    let fp = function_path_counts(&m, 0).unwrap();
    assert!(fp.paths.is_empty());
    assert_eq!(fp.total, 0);
    assert!(fp.counts.exact);
    assert!(fp.counts.edges.iter().chain(&fp.counts.blocks).all(|&x| x == Some(0)));
}

#[test]
fn record_flags_make_path_counts_inexact() {
    let mut m = module("p.c", vec![lecture()]);
    m.flags = layout::RECORD_FLAG_INCOMPLETE;
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(c.inexact_reasons, [InexactReason::Incomplete]);
    assert_eq!(c.entry, Some(11));
    // Path updates the runtime dropped (a full table) are their own reason, not a run that ended abnormally.
    m.flags = layout::RECORD_FLAG_DROPPED;
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(c.inexact_reasons, [InexactReason::Dropped]);
    assert!(c.inexact_reasons[0].to_string().starts_with("the runtime dropped path counts"));
}

// ---------------------------------------------------------------------------------------------------------------
// Corrupt path data: analysis errors

#[test]
fn path_number_out_of_range_marks_the_function_inexact_and_keeps_the_rest() {
    // An intact file whose counts name a path the function does not have: the count is left out, every other
    // path is still decoded with its count, and the function is reported inexact with the reason.
    let (f, good) = loop_diamond(PathStorage::Hashed { table: 0 });
    let clean = function_path_counts(&module("p.c", vec![(f.clone(), good.clone())]), 0).unwrap();
    for bad_path in [8u128, u128::MAX] {
        let mut counts = good.clone();
        counts.insert(bad_path, 1);
        let m = module("p.c", vec![(f.clone(), counts)]);
        let m = read(&write(&Profile { modules: vec![m] })).unwrap().modules.remove(0);
        let fp = function_path_counts(&m, 0).unwrap();
        assert_eq!(fp.paths, clean.paths, "the in-range paths decode as without the stray count");
        assert!(!fp.counts.exact);
        assert_eq!(fp.counts.inexact_reasons, [InexactReason::PathOutOfRange { path: bad_path, num_paths: 8 }]);
        assert_eq!(
            fp.counts.inexact_reasons[0].to_string(),
            format!("a count for path {bad_path}, but only 8 paths (left out)")
        );
        assert_eq!(fp.counts.blocks, clean.counts.blocks, "the rest is still shown");
        assert_eq!(function_edge_counts(&m, 0).unwrap(), fp.counts);
    }
}

#[test]
fn num_paths_mismatch_is_an_error() {
    let (mut f, counts) = loop_diamond(PathStorage::Dense);
    f.path.as_mut().unwrap().num_paths = 9;
    let m = module("p.c", vec![(f, counts)]);
    // Self-consistent for the reader (9 dense counters for 9 paths)...
    let m = read(&write(&Profile { modules: vec![m] })).unwrap().modules.remove(0);
    assert_eq!(m.counters.len(), 9);
    // ...but the graph and budget give 8 paths.
    let e = function_path_counts(&m, 0).unwrap_err();
    assert_eq!(
        e,
        AnalysisError::NumPathsMismatch {
            module: "p.c".into(),
            function: "loop_diamond".into(),
            recorded: 9,
            recomputed: 8
        }
    );
    assert_eq!(
        e.to_string(),
        "corrupt profile: function loop_diamond of module p.c records 9 paths, but its graph and budget give 8"
    );
    // Another budget: the lecture graph cannot be cut to 2 paths.
    let (mut f, counts) = lecture();
    f.path.as_mut().unwrap().budget = 2;
    let m = module("p.c", vec![(f, counts)]);
    let e = function_path_counts(&m, 0).unwrap_err();
    assert!(matches!(e, AnalysisError::PathDag { .. }), "{e:?}");
}

#[test]
fn path_analysis_errors() {
    let m = module("p.c", vec![lecture()]);
    assert!(matches!(
        function_path_counts(&m, 1),
        Err(AnalysisError::FunctionOutOfRange { index: 1, num_functions: 1, .. })
    ));
    // Dense function with hashed entries.
    let mut bad = m.clone();
    bad.sparse.push(SparseEntry { function: 0, path: 1, count: 1 });
    assert!(matches!(function_path_counts(&bad, 0), Err(AnalysisError::MixedPathStorage { .. })));
    // Hand-built: no path data, too few counters.
    let mut bad = m.clone();
    bad.meta.functions[0].path = None;
    let e = function_edge_counts(&bad, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "corrupt profile: function lecture of module p.c is in a path-mode module but has no path data"
    );
    let mut bad = m.clone();
    bad.counters.pop();
    assert!(matches!(function_path_counts(&bad, 0), Err(AnalysisError::CounterOutOfRange { .. })));
    // Edge-mode modules have no path counts.
    let mut edge = m;
    edge.meta.mode = Mode::Edge;
    let e = function_path_counts(&edge, 0).unwrap_err();
    assert_eq!(e.to_string(), "module p.c was profiled in edge mode: its counters are not path counters");
}

// ---------------------------------------------------------------------------------------------------------------
// Merge: path-mode counters are signed and wrap

#[test]
fn merge_wraps_signed_path_counts() {
    let (f, counts) = uses_setjmp(true);
    let (h, hcounts) = loop_diamond(PathStorage::Hashed { table: 0 });
    let mut m = module("s.c", vec![(f, counts), (h, hcounts)]);
    // A hashed correction: −1 on path 6 of the hashed function.
    m.sparse.push(SparseEntry { function: 1, path: 6, count: u64::MAX });
    let p = Profile { modules: vec![m.clone()] };
    let merged = merge(&[p.clone(), p.clone(), p]).unwrap();
    let mm = &merged.modules[0];
    // (2^64 − 2) × 3 would overflow a checked u64 sum; as i64 it is −6.
    assert_eq!(mm.counters, vec![9, 6, 6, (-6i64) as u64]);
    let six = mm.sparse.iter().find(|s| s.function == 1 && s.path == 6).unwrap();
    assert_eq!(six.count as i64, -3);
    assert_eq!(mm.runs, 3);
    assert_eq!(read(&write(&merged)).unwrap(), merged);
    let c = function_edge_counts(mm, 0).unwrap();
    assert!(c.exact, "{:?}", c.inexact_reasons);
    assert_eq!(c.raw_edges, vec![15, 15, 6, 9, 15, -6, 6, 15]);
    assert_eq!(c.entry, Some(15));
    // Wrapping never turns into an error, even at the extremes.
    let mut x = m.clone();
    x.counters = vec![u64::MAX; 4];
    let y = Profile { modules: vec![x] };
    let merged = merge(&[y.clone(), y]).unwrap();
    assert_eq!(merged.modules[0].counters, vec![u64::MAX - 1; 4]);
}

// ---------------------------------------------------------------------------------------------------------------
// Property tests: path analysis never panics on mutated profiles

fn path_sample() -> Profile {
    let (h, hc) = loop_diamond(PathStorage::Hashed { table: 0 });
    let m = module("p.c", vec![lecture(), (h, hc), uses_setjmp(true), diamonds()]);
    Profile { modules: vec![m] }
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Every analysis of every function of every module, with the counters read both as net and as arrival counts
/// (`path_arrivals`), plus a merge with itself: must return, never panic.
fn analyse_everything(p: &Profile) {
    for m in &p.modules {
        let mut other_reading = m.clone();
        other_reading.meta.path_arrivals = !m.meta.path_arrivals;
        for m in [m, &other_reading] {
            for i in 0..m.meta.functions.len() + 1 {
                let _ = function_path_counts(m, i);
                let _ = function_edge_counts(m, i);
            }
        }
    }
    let _ = merge(&[p.clone(), p.clone()]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn path_analysis_never_panics_on_mutated_bytes(
        edits in proptest::collection::vec((any::<usize>(), 1u8..), 1..6),
    ) {
        // Edits with the header repaired, so they reach counters, sparse entries and metadata checks.
        let mut b = write(&path_sample());
        for &(at, x) in &edits {
            let n = b.len();
            b[at % n] ^= x;
        }
        let payload = (b.len() - FILE_HEADER_LEN) as u64;
        put_u64(&mut b, 24, payload);
        let sum = layout::fnv1a64(&b[FILE_HEADER_LEN..]);
        put_u64(&mut b, 32, sum);
        if let Ok(p) = read(&b) {
            analyse_everything(&p);
        }
    }

    #[test]
    fn path_analysis_never_panics_on_arbitrary_counts(
        counters in proptest::collection::vec(any::<u64>(), 0..40),
        sparse in proptest::collection::vec((0u64..5, prop_oneof![0u128..16, any::<u128>()], any::<u64>()), 0..12),
        flags in 0u64..8,
    ) {
        let mut p = path_sample();
        let m = &mut p.modules[0];
        for (slot, c) in m.counters.iter_mut().zip(&counters) {
            *slot = *c;
        }
        m.sparse = sparse.into_iter().map(|(function, path, count)| SparseEntry { function, path, count }).collect();
        m.flags = flags;
        analyse_everything(&p);
    }

    #[test]
    fn path_analysis_never_panics_on_mutated_metadata(
        budget in prop_oneof![Just(0u128), 1u128..40, any::<u128>()],
        num_paths in prop_oneof![0u128..40, any::<u128>()],
        which in 0usize..4,
        instrumented in proptest::collection::vec(any::<u32>(), 0..4),
        reentry in proptest::collection::vec(0u32..14, 0..3),
    ) {
        let mut p = path_sample();
        let m = &mut p.modules[0];
        let f = &mut m.meta.functions[which];
        let pm = f.path.as_mut().unwrap();
        pm.budget = budget;
        pm.num_paths = num_paths;
        pm.instrumented_edges = instrumented;
        f.reentry_blocks = reentry;
        // Hand-built (not re-read): the analysis must not rely on `validate` for its own safety.
        analyse_everything(&p);
    }

    #[test]
    fn path_analysis_never_panics_when_metadata_bytes_are_mutated(
        edits in proptest::collection::vec((any::<usize>(), 1u8..), 1..4),
    ) {
        let mut m = path_sample().modules.remove(0);
        for &(at, x) in &edits {
            let n = m.meta_bytes.len();
            m.meta_bytes[at % n] ^= x;
        }
        m.meta_hash = layout::fnv1a64(&m.meta_bytes);
        if let Ok(p) = read(&write(&Profile { modules: vec![m] })) {
            analyse_everything(&p);
        }
    }
}
