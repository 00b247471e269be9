//! Loop resets: which loop headers restart every path that enters them, so that each iteration of the loop
//! starts at one path number.
//!
//! In Ball and Larus's DAG a loop's back edge ends the path of one iteration, and the next starts at the header
//! with the back edge's surrogate. The first iteration is different: its path began before the loop, so the
//! number the back edge counts on the first iteration depends on where the loop was entered from. For a loop
//! nested in another, or entered along several paths, the back edge's count then has a run-time address even
//! when the loop's body has one path: the pass tests the number against the few that repeat and counts any
//! other in memory ([`super::promoted_paths`]). That test keeps LLVM from folding a loop that only counts into
//! its trip count and from vectorising a loop with a select in it (zlib's `slide_hash`, a six-deep counting nest).
//!
//! A *reset* header ends the path on every edge that enters the loop (like a cut) and starts every path into the
//! header — after a back edge or an entry — with one shared surrogate (`dag::assemble`). Every iteration then
//! ends at the back edge with a number that depends on the body's branches only; for a body of one path, a
//! constant the count can use directly, so the loop's counts are plain register additions LLVM can fold into
//! trip counts. The price is information: a path no longer runs from before the loop into its first iteration,
//! and the loop's entry is one more count (once per entry, outside the iterations).
//!
//! [`loop_resets`] picks the headers, innermost loops first, from the graph alone (the readers recompute the
//! same set): a loop whose body has no point where the activation may end (a `Termination` edge: those loops
//! are never promoted) and where resetting leaves at most [`LOOP_RESET_MAX_PATHS`] path number at each edge that
//! counts inside an iteration (its back edges, and the entries of inner loops reset before it) — fewer than
//! without. A nest of such loops resets from the inside out.

use super::budget;
use super::dag::{assemble, CfgEdgeRole, PathDag};
use crate::dfs::DfsInfo;
use crate::graph::{Adjacency, BlockId, Cfg, EdgeKind};
use crate::loops::natural_loops;

/// At most this many path numbers at each edge that counts inside an iteration of a reset loop: one, so that
/// its count is a constant a promoted register adds 1 to. With two (as many as the pass tests for), LLVM turns
/// the complete test into two compare-and-add sequences per iteration, more instructions than the branches of
/// the incomplete test it replaced (bubble sort's inner loop: +76% instructions by callgrind).
pub const LOOP_RESET_MAX_PATHS: u128 = 1;

/// Per vertex: whether it is a reset header (see the module documentation). Deterministic.
pub fn loop_resets(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo) -> Vec<bool> {
    let nv = cfg.num_vertices();
    let mut reset = vec![false; nv];
    let is_back = dfs.back_edge_mask(cfg.num_edges());
    let no_cuts = vec![false; nv];
    let ends = |v: BlockId| adj.out_edges(v).iter().any(|&e| cfg.edge(e).kind == EdgeKind::Termination);
    let mut loops: Vec<_> = natural_loops(cfg, adj, dfs)
        .loops
        .into_iter()
        .filter(|l| {
            l.header != cfg.entry()
                && !l.body.iter().any(|&v| ends(v))
                // The DAG's back edges into the header are exactly the loop's (a reducible loop).
                && adj.in_edges(l.header).iter().all(|&e| is_back[e.index()] == l.back_edges.contains(&e))
        })
        .collect();
    // Innermost first: a loop's body contains its inner loops'.
    loops.sort_by_key(|l| (l.body.len(), l.header));
    // The DAG of the resets decided so far, and its prefix counts: each loop builds only its trial DAG.
    let build = |reset: &[bool]| {
        let dag = assemble(cfg, adj, dfs, &no_cuts, reset);
        let (_, prefixes) = budget::saturating_counts(&dag);
        (dag, prefixes)
    };
    let mut current = build(&reset);
    for l in &loops {
        // The path numbers counted inside an iteration: at the loop's back edges and at the entries of the
        // inner loops reset before it (the largest count over those edges).
        let in_body = |v: BlockId| l.body.binary_search(&v).is_ok();
        let numbers_counted = |(dag, prefixes): &(PathDag, Vec<u128>)| {
            cfg.edge_ids()
                .filter(|&e| {
                    let edge = cfg.edge(e);
                    in_body(edge.from)
                        && (l.back_edges.contains(&e)
                            || (in_body(edge.to) && matches!(dag.cfg_edge_role(e), CfgEdgeRole::Cut { .. })))
                })
                .map(|e| prefixes[cfg.edge(e).from.index()])
                .max()
                .unwrap_or(0)
        };
        let before = numbers_counted(&current);
        reset[l.header.index()] = true;
        let trial = build(&reset);
        let after = numbers_counted(&trial);
        if after > LOOP_RESET_MAX_PATHS || after >= before {
            reset[l.header.index()] = false;
        } else {
            current = trial;
        }
    }
    reset
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ball_larus::numbering::Numbering;
    use crate::ball_larus::regenerate::{decode, to_cfg_path, PathEnd, PathStart};
    use crate::dfs::depth_first;
    use crate::graph::{test_cfg, EdgeId};

    /// 0 → 1 (outer header) → 2 (inner header) ⇄ 3, 2 → 4 → 1, 1 → 5 → EXIT (`promoted_paths`'s nest): edges
    /// 0 (0→1), 1 (1→2), 2 (2→3), 3 (3→2, inner back), 4 (2→4), 5 (4→1, outer back), 6 (1→5).
    fn nest() -> Cfg {
        test_cfg(6, &[(0, 1), (1, 2), (2, 3), (3, 2), (2, 4), (4, 1), (1, 5)], &[5])
    }

    /// Every path number that ends at `e` (its count's possible addresses), by brute force over all numbers.
    fn numbers_ending_at(dag: &PathDag, e: EdgeId) -> Vec<(PathStart, Vec<u32>)> {
        let n = Numbering::compute(dag).expect("small graph");
        (0..n.num_paths())
            .filter_map(|r| {
                let p = to_cfg_path(dag, &decode(dag, &n, r).expect("in range")).expect("valid");
                let ends = matches!(p.end, PathEnd::BackEdge { back } | PathEnd::Cut { edge: back } if back == e);
                ends.then(|| (p.start, p.blocks.iter().map(|b| b.0).collect()))
            })
            .collect()
    }

    /// By hand: uncut, the inner back edge ends three paths (2→3 from the inner header, 1→2→3 from the outer
    /// one, 0→1→2→3 from the entry) and the outer back edge three (2→4, 1→2→4, 0→1→2→4). Resetting both headers leaves one path at each back edge (2→3 and 2→4), one at the inner loop's
    /// entry 1→2 (the path 1 from the outer header) and one at the outer loop's entry 0→1 (the path 0).
    #[test]
    fn a_counting_nest_resets_both_headers_and_counts_one_number_per_edge() {
        let g = nest();
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        let reset = loop_resets(&g, &adj, &dfs);
        assert_eq!(reset, vec![false, true, true, false, false, false, false]);
        let plain = PathDag::build(&g, &adj, &dfs);
        assert_eq!(numbers_ending_at(&plain, EdgeId(3)).len(), 3);
        assert_eq!(numbers_ending_at(&plain, EdgeId(5)).len(), 3);
        let dag = PathDag::build_for_path_mode(&g, &adj, &dfs, u128::MAX, true).expect("fits");
        let (inner, outer) = (EdgeId(3), EdgeId(5));
        let at = |e| numbers_ending_at(&dag, e);
        assert_eq!(at(inner), vec![(PathStart::LoopHeader { back: inner }, vec![2, 3])]);
        assert_eq!(at(outer), vec![(PathStart::LoopHeader { back: inner }, vec![2, 4])]);
        assert_eq!(at(EdgeId(1)), vec![(PathStart::LoopHeader { back: outer }, vec![1])]);
        assert_eq!(at(EdgeId(0)), vec![(PathStart::Entry, vec![0])]);
    }

    /// A loop with a call that may not return (a `Termination` edge) is never promoted: it keeps its paths.
    #[test]
    fn a_loop_that_may_end_the_activation_is_not_reset() {
        let g = test_cfg(4, &[(0, 1), (1, 2), (2, 1), (1, 3)], &[3]);
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        assert!(loop_resets(&g, &adj, &dfs).iter().any(|&r| r), "a plain loop entered from a path is reset");
        let mut edges: Vec<_> = g.edges().to_vec();
        edges.insert(3, crate::graph::Edge { from: BlockId(2), to: g.exit(), kind: EdgeKind::Termination });
        let with_call = Cfg::new(4, edges).expect("valid");
        let adj = with_call.adjacency();
        let dfs = depth_first(&with_call, &adj);
        assert!(loop_resets(&with_call, &adj, &dfs).iter().all(|&r| !r));
    }
}
