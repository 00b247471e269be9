//! Edge and block counts derived from chord counters (edge mode), on synthetic modules built from `test_cfg`
//! graphs with hand-chosen counter placements (a spanning tree containing the virtual edges; the chords carry
//! counters): these tests exercise the analysis, not placement.

use pathprof_analysis::{function_edge_counts, AnalysisError, InexactReason};
use pathprof_core::fixtures::longjmp_cfg;
use pathprof_core::{BlockId, EdgeId};
use pathprof_format::layout;
use pathprof_format::meta::Mode;
use pathprof_format::profile::ModuleProfile;

// ---------------------------------------------------------------------------------------------------------------
// Fixtures (graphs and counter placements: `pathprof_core::fixtures`)

#[path = "../../format/tests/support/edge_module.rs"]
mod edge_module;
use edge_module::{function, module, module_meta};

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
    let cfg = longjmp_cfg();
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
    m.flags = layout::RECORD_FLAG_INCOMPLETE
        | layout::RECORD_FLAG_THREADED_NONATOMIC
        | layout::RECORD_FLAG_HANDLER_ESCAPED
        | layout::RECORD_FLAG_THREADS_IN_FLIGHT
        | (1 << 7);
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(
        c.inexact_reasons,
        [
            InexactReason::Incomplete,
            InexactReason::ThreadedNonatomic,
            InexactReason::HandlerEscaped,
            InexactReason::ThreadsInFlight,
            InexactReason::UnknownFlags(0x80)
        ]
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
