//! Edge and block counts derived from chord counters (edge mode), on synthetic modules built from `test_cfg`
//! graphs with hand-chosen counter placements (a spanning tree containing the virtual edges; the chords carry
//! counters): these tests exercise the analysis, not placement.

use pathprof_analysis::{function_edge_counts, AnalysisError, InexactReason};
use pathprof_core::fixtures::{early_exit_cfg, early_exit_chords, loop_diamond_cfg, loop_diamond_chords};
use pathprof_core::{BlockId, Cfg, Edge, EdgeId, EdgeKind};
use pathprof_format::layout;
use pathprof_format::meta::{BlockMeta, FunctionMeta, Mode, ModuleMeta};
use pathprof_format::profile::{self, ModuleProfile};

// ---------------------------------------------------------------------------------------------------------------
// Fixtures (graphs and counter placements: `pathprof_core::fixtures`)

/// Loop around a diamond: 0 → 1; 1 → 2 | 3; 2, 3 → 4; 4 → 1 (back edge) | 5; 5 returns.
/// Edges: e0 0→1, e1 1→2, e2 1→3, e3 2→4, e4 3→4, e5 4→1, e6 4→5, e7 5→EXIT, e8 EXIT→0.
/// Spanning tree {e8, e0, e1, e3, e4, e7}; chords e2, e5, e6 carry counters 0, 1, 2.
/// With 2 invocations and 10 loop iterations (7 via bb2, 3 via bb3): e2 = 3, e5 = 8, e6 = 2.
fn loop_diamond(counter_base: u64) -> FunctionMeta {
    function("loop_diamond", loop_diamond_cfg(), loop_diamond_chords(), counter_base, 3)
}

/// 0 → 1 → 2 → return, and bb1 may leave abnormally (a call to `exit`).
/// Edges: e0 0→1, e1 1→2, e2 2→EXIT (Return), e3 1→EXIT (Termination), e4 EXIT→0.
/// Spanning tree {e4, e3, e1}; chords e0, e2 carry counters 0, 1. 5 calls, 1 abnormal exit: e0 = 5, e2 = 4.
fn early_exit(counter_base: u64) -> FunctionMeta {
    function("early_exit", early_exit_cfg(), early_exit_chords(), counter_base, 2)
}

fn function(name: &str, cfg: Cfg, edge_counters: Vec<Option<u32>>, counter_base: u64, n: u32) -> FunctionMeta {
    let blocks = (0..cfg.num_blocks()).map(|b| BlockMeta { lines: vec![10 + b as u32, 20 + b as u32] }).collect();
    FunctionMeta {
        name: name.to_string(),
        display_name: format!("{name}()"),
        file: "t.c".into(),
        start_line: 9,
        cfg_hash: profile::cfg_hash(&cfg),
        path: None,
        cfg,
        blocks,
        edge_counters,
        counter_base,
        num_counters: n,
        reentry_blocks: vec![],
    }
}

fn module_meta(name: &str) -> ModuleMeta {
    ModuleMeta {
        interproc: None,
        path_arrivals: false,
        fork_reentries: false,
        module_name: name.to_string(),
        output: String::new(),
        mode: Mode::Edge,
        weighting: "uniform".into(),
        atomic: false,
        functions: vec![loop_diamond(0), early_exit(3)],
    }
}

fn module(name: &str, counters: Vec<u64>) -> ModuleProfile {
    ModuleProfile::new(module_meta(name), counters, vec![], 0, 1)
}

// ---------------------------------------------------------------------------------------------------------------
// Analysis: counts derived from the chord counters


#[test]
fn loop_diamond_counts_are_derived_exactly() {
    let m = module("a.c", vec![3, 8, 2, 5, 4]);
    let c = function_edge_counts(&m, 0).unwrap();
    let some = |v: &[u64]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
    assert_eq!(c.edges, some(&[2, 7, 3, 7, 3, 8, 2, 2, 2]));
    assert_eq!(c.raw_edges, vec![2, 7, 3, 7, 3, 8, 2, 2, 2]);
    assert_eq!(c.blocks, some(&[2, 10, 7, 3, 10, 2]));
    assert_eq!(c.entry, Some(2));
    assert_eq!(c.measured, [false, false, true, false, false, true, true, false, false]);
    assert!(c.exact);
    assert!(c.inexact_reasons.is_empty());
}

#[test]
fn early_exit_counts_abnormal_departures() {
    let m = module("a.c", vec![3, 8, 2, 5, 4]);
    let c = function_edge_counts(&m, 1).unwrap();
    assert_eq!(c.edges, [Some(5), Some(4), Some(4), Some(1), Some(5)]);
    assert_eq!(c.blocks, [Some(5), Some(5), Some(4)]);
    assert_eq!(c.entry, Some(5));
    assert!(c.exact);
}

#[test]
fn never_executed_function_has_zero_counts() {
    let m = module("a.c", vec![0; 5]);
    for f in 0..2 {
        let c = function_edge_counts(&m, f).unwrap();
        assert!(c.edges.iter().chain(&c.blocks).all(|&x| x == Some(0)));
        assert_eq!(c.entry, Some(0));
        assert!(c.exact);
    }
}

#[test]
fn negative_derived_edges_are_inexact_and_not_numbers() {
    // e2 = 20 exceeds the 10 entries of bb1, so e1 = e3 = -10.
    let m = module("a.c", vec![20, 8, 2, 5, 4]);
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(c.edges[1], None);
    assert_eq!(c.edges[3], None);
    assert_eq!(c.raw_edges[1], -10);
    assert_eq!(c.blocks[2], None);
    assert!(c.inexact_reasons.contains(&InexactReason::NegativeEdge {
        edge: EdgeId(1),
        from: BlockId(1),
        to: BlockId(2),
        value: -10
    }));
    assert_eq!(c.inexact_reasons[0].to_string(), "edge e1 (bb1->bb2) derived as negative");
}

/// 0 → 1 → 2 → return; bb1 holds a setjmp (re-entry block), bb2 calls a function that longjmps back into bb1.
/// Edges: e0 0→1, e1 1→2, e2 2→EXIT (Return), e3 1→EXIT (Term), e4 2→EXIT (Term), e5 EXIT→0.
/// Tree {e5, e3, e4}; chords e0, e1, e2. 5 calls, 2 longjmps: e0 = 5, e1 = 7, e2 = 5, so e3 = -2 (net
/// re-entries of bb1) and e4 = 2 (abnormal departures from bb2).
fn setjmp_function(reentry: bool) -> ModuleProfile {
    let b = |f: u32, t: u32, kind| Edge { from: BlockId(f), to: BlockId(t), kind };
    let cfg = Cfg::new(
        3,
        vec![
            b(0, 1, EdgeKind::Branch { succ: 0 }),
            b(1, 2, EdgeKind::Branch { succ: 0 }),
            b(2, 3, EdgeKind::Return),
            b(1, 3, EdgeKind::Termination),
            b(2, 3, EdgeKind::Termination),
            b(3, 0, EdgeKind::ExitToEntry),
        ],
    )
    .unwrap();
    let mut f = function("uses_setjmp", cfg, vec![Some(0), Some(1), Some(2), None, None, None], 0, 3);
    if reentry {
        f.reentry_blocks = vec![1];
    }
    let mut meta = module_meta("s.c");
    meta.functions = vec![f];
    ModuleProfile::new(meta, vec![5, 7, 5], vec![], 0, 1)
}

#[test]
fn setjmp_reentry_blocks_may_have_negative_termination_edges() {
    let c = function_edge_counts(&setjmp_function(true), 0).unwrap();
    assert!(c.exact, "{:?}", c.inexact_reasons);
    assert_eq!(c.edges, [Some(5), Some(7), Some(5), None, Some(2), Some(5)]);
    assert_eq!(c.raw_edges[3], -2);
    assert_eq!(c.entry, Some(5));
    // Without the re-entry mark the same counts are evidence of a broken profile.
    let c = function_edge_counts(&setjmp_function(false), 0).unwrap();
    assert!(!c.exact);
    assert!(matches!(c.inexact_reasons[..], [InexactReason::NegativeEdge { edge: EdgeId(3), value: -2, .. }]));
}

#[test]
fn record_flags_make_counts_inexact() {
    let mut m = module("a.c", vec![3, 8, 2, 5, 4]);
    m.flags = layout::RECORD_FLAG_INCOMPLETE | layout::RECORD_FLAG_THREADED_NONATOMIC | (1 << 7);
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(
        c.inexact_reasons,
        [InexactReason::Incomplete, InexactReason::ThreadedNonatomic, InexactReason::UnknownFlags(0x80)]
    );
    // The counts are still given: they are a lower bound.
    assert_eq!(c.entry, Some(2));
}

#[test]
fn counts_beyond_u64_are_not_numbers() {
    let max = u64::MAX;
    let m = module("a.c", vec![max, max, max, 0, 0]);
    let c = function_edge_counts(&m, 0).unwrap();
    // bb1 and bb4 ran 2^65 - 2 times; every edge count fits.
    assert_eq!(c.blocks[1], None);
    assert!(c.edges.iter().all(Option::is_some));
    assert!(c
        .inexact_reasons
        .contains(&InexactReason::BlockTooLarge { block: BlockId(1), value: 2 * i128::from(max) }));
}

#[test]
fn analysis_errors() {
    let m = module("a.c", vec![0; 5]);
    assert!(matches!(
        function_edge_counts(&m, 2),
        Err(AnalysisError::FunctionOutOfRange { index: 2, num_functions: 2, .. })
    ));
    let mut meta = module_meta("p.c");
    meta.mode = Mode::Path;
    let p = ModuleProfile::new(meta, vec![0; 5], vec![], 0, 1);
    // Path-mode counts are derived from path counts; these functions have no path data (read() refuses that).
    let e = function_edge_counts(&p, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "corrupt profile: function loop_diamond of module p.c is in a path-mode module but has no path data"
    );
    // Hand-built record with too few counters (read() refuses these).
    let short = ModuleProfile::new(module_meta("a.c"), vec![0; 4], vec![], 0, 1);
    assert!(matches!(function_edge_counts(&short, 1), Err(AnalysisError::CounterOutOfRange { .. })));
}
