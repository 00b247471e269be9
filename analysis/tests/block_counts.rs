//! Block mode's reader: block and entry counts derived from the counted edges of a hand-built module on the BL94
//! Figure 4 analogue (a guarded repeat-until loop with a diamond body), with the counters placed by hand.

use pathprof_analysis::{function_edge_counts, InexactReason};
use pathprof_core::graph::test_cfg;
use pathprof_core::BlockId;
use pathprof_format::layout;
use pathprof_format::meta::Mode;
use pathprof_format::profile::ModuleProfile;

#[path = "../../format/tests/support/metadata.rs"]
mod metadata;

/// a0 b1 c2 d3 e4 f5 g6 h7, EXIT 8; e0 a→b, e1 a→f, e2 b→c, e3 b→d, e4 c→e, e5 d→e, e6 e→b, e7 e→f, e8 f→g,
/// e9 f→h, e10 g→X, e11 h→X, e12 X→a. Counters on `counted` (in order), with values `counters`.
fn module(counted: &[usize], counters: Vec<u64>, flags: u64) -> ModuleProfile {
    let cfg = test_cfg(8, &[(0, 1), (0, 5), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5), (5, 6), (5, 7)], &[6, 7]);
    let mut f = metadata::function_meta("fig4", "a.c", cfg, |b| vec![10 + b as u32]);
    for (i, &e) in counted.iter().enumerate() {
        f.edge_counters[e] = Some(i as u32);
    }
    f.num_counters = counted.len() as u32;
    ModuleProfile::new(metadata::module_meta("a.c", Mode::Block, vec![f]), counters, vec![], flags, 1)
}

#[test]
fn block_counts_come_from_four_counters() {
    // pathprof's placement (c->e, d->e, g->X, h->X) and two runs: "a b c e b d e f g X" and "a f h X".
    let m = module(&[4, 5, 10, 11], vec![1, 1, 1, 1], 0);
    let c = function_edge_counts(&m, 0).unwrap();
    //                   a        b        c        d        e        f        g        h
    assert_eq!(c.blocks, [Some(2), Some(2), Some(1), Some(1), Some(2), Some(2), Some(1), Some(1)]);
    assert_eq!(c.entry, Some(2));
    // The four edges of the pipeless cycle {a->b, e->b, e->f, a->f} are not determined: absent, not guessed.
    let unknown: Vec<usize> = (0..13).filter(|&i| c.edges[i].is_none()).collect();
    assert_eq!(unknown, [0, 1, 6, 7]);
    assert_eq!(c.edges[2], Some(1)); // b->c
    assert_eq!(c.edges[8], Some(1)); // f->g
    assert!(c.exact, "{:?}", c.inexact_reasons);
}

#[test]
fn a_placement_with_a_piped_uncounted_cycle_leaves_blocks_underived() {
    // Counters on e->f, d->e, g->X, h->X: the uncounted cycle c->e->b->c is directed, so b, c and e cannot be
    // told apart from the runs "a b c e b d e f g X" / "a b d e f g X"; they are reported, not guessed.
    let m = module(&[7, 5, 10, 11], vec![1, 1, 1, 0], 0);
    let c = function_edge_counts(&m, 0).unwrap();
    assert_eq!(c.blocks, [Some(1), None, None, Some(1), None, Some(1), Some(1), Some(0)]);
    assert!(!c.exact);
    let b = |i| InexactReason::BlockNotDerivable { block: BlockId(i) };
    assert_eq!(c.inexact_reasons, [b(1), b(2), b(4)]);
}

#[test]
fn record_flags_make_block_counts_inexact_as_in_edge_mode() {
    let m = module(&[4, 5, 10, 11], vec![1, 1, 1, 1], layout::RECORD_FLAG_INCOMPLETE);
    let c = function_edge_counts(&m, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(c.inexact_reasons, [InexactReason::Incomplete]);
}
