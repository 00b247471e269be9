//! Property tests: Algorithm 1 meets Definition 1 on random CFGs, its UPs cut every walk exactly, and (below)
//! the static cache categories agree with a concrete cache simulation of random executions.

use super::stats::MeasurementStats;
use super::uppa::{per_block_uppa, small_uppa};
use super::verify::verify;
use crate::graph::BlockId;
use crate::random_cfg::{random_cfg, RandomCfg};
use crate::test_rng::Rng;
use proptest::prelude::*;

/// A random walk from the entry to EXIT: the blocks and edge ids taken (progress edges only after 40 steps).
fn walk(rc: &RandomCfg, rng: &mut Rng) -> (Vec<BlockId>, Vec<usize>) {
    let g = &rc.cfg;
    let adj = g.adjacency();
    let (mut blocks, mut edges) = (Vec::new(), vec![g.exit_to_entry().index()]);
    let mut v = g.entry();
    while v != g.exit() {
        blocks.push(v);
        let outs = adj.out_edges(v);
        let e = if blocks.len() > 40 { rc.progress[v.index()] } else { outs[rng.below(outs.len())] };
        edges.push(e.index());
        v = g.edge(e).to;
    }
    (blocks, edges)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn algorithm_1_meets_definition_1_and_cuts_walks_into_its_ups(
        rc in random_cfg(12, 16, true), calls in prop::collection::vec(prop::bool::weighted(0.2), 12), seed: u64
    ) {
        let g = &rc.cfg;
        let calls = &calls[..g.num_blocks()];
        let u = small_uppa(g, calls);
        prop_assert_eq!(verify(g, calls, &u), Ok(()));
        prop_assert_eq!(verify(g, calls, &per_block_uppa(g)), Ok(()));
        prop_assert!(u.paths().len() <= g.num_blocks());

        // A walk is a sequence of UP executions: cut after every tail; each piece is a UP.
        let (_, tails) = u.marks(g.num_blocks());
        let mut rng = Rng::new(seed);
        let mut counts = vec![0u64; g.num_edges()];
        let (mut ups, mut blocks) = (0u64, 0u64);
        for _ in 0..3 {
            let (walk, edges) = walk(&rc, &mut rng);
            for e in edges {
                counts[e] += 1;
            }
            blocks += walk.len() as u64;
            let mut piece = Vec::new();
            for b in walk {
                piece.push(b);
                if tails[b.index()] {
                    prop_assert!(u.find(&piece).is_some(), "{:?} is no UP", piece);
                    ups += 1;
                    piece.clear();
                }
            }
            prop_assert!(piece.is_empty(), "a walk ends at a tail");
        }
        // Counting each UP at its measurement point (from edge counts) counts exactly its executions.
        let s = MeasurementStats::executed(g, &u, &counts);
        prop_assert_eq!((s.executed_points, s.executed_blocks), (ups, blocks));
        prop_assert!(s.executed_points <= s.executed_blocks);
    }
}
