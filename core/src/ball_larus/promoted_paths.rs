//! Which path counts of a loop can live in a register: the few paths a back edge ends when its path started
//! inside the loop.
//!
//! In edge mode a loop's counter updates have constant addresses, so [`crate::promotion`] keeps them in
//! registers. A Ball–Larus path count at a back edge `w→v` has a run-time address, `count[r + Inc(w→EXIT)]`: the
//! path that ends there may have started anywhere — at the function's entry on the first iteration, at v's
//! reset on the later ones, at an inner loop's header. But once a loop has run one iteration, the path it ends
//! at each back edge started at a reset *inside* the loop, and a loop body with one path (or two) leaves only
//! one (or two) numbers for it. The instrumentation tests the path number against those constants and counts a
//! match at a constant address, which promotion keeps in a register; any other number (the first iteration's
//! path, a rare path through the body) is counted in memory as before. A path's number is unique, so the test
//! is exact whatever path actually ran.
//!
//! Candidates are ordered most-likely-hot first: paths that start inside the back edge's own loop (at its header,
//! or at the header of a loop nested in it) before paths that start outside it (which entered the loop: its
//! first iteration), and within each, paths that start at a deeper loop header (the innermost loop runs most
//! often), then by number. Paths are taken start by start, a start only with all its paths, until the limit: a
//! body with many paths is left to memory, since testing a few of them would cost every iteration a compare and
//! rarely match. (Depth alone let a sibling loop at the same depth go first: bzip2's move-to-front loop, one
//! path per iteration, tested two first-iteration paths from the loop before it and counted every iteration
//! in memory.)

use super::dag::{CfgEdgeRole, DagEdgeId, PathDag};
use super::numbering::Numbering;
use crate::dfs::depth_first;
use crate::graph::{BlockId, Cfg};
use crate::loops::natural_loops;
use crate::promotion::PromotionRegion;

/// Per cfg edge (indexed by `EdgeId`): for a back or cut edge with both ends in one of `regions`, the path
/// numbers worth testing for (at most `limit`, most likely first); empty for every other edge.
pub fn promoted_paths(
    cfg: &Cfg,
    dag: &PathDag,
    numbering: &Numbering,
    regions: &[PromotionRegion],
    limit: usize,
) -> Vec<Vec<u128>> {
    promoted_dag_paths(cfg, dag, regions, limit, &|_| true)
        .into_iter()
        .map(|paths| paths.iter().map(|p| p.iter().map(|&d| numbering.val(d)).sum()).collect())
        .collect()
}

/// [`promoted_paths`] as DAG paths (first edge the reset, last the back edge's exit surrogate), for numberings
/// other than Ball–Larus's (Melski–Reps sums ρ along them); only paths whose every edge is `usable`.
pub fn promoted_dag_paths(
    cfg: &Cfg,
    dag: &PathDag,
    regions: &[PromotionRegion],
    limit: usize,
    usable: &dyn Fn(DagEdgeId) -> bool,
) -> Vec<Vec<Vec<DagEdgeId>>> {
    let mut out = vec![Vec::new(); cfg.num_edges()];
    if limit == 0 || regions.is_empty() {
        return out;
    }
    let adj = cfg.adjacency();
    let loops = natural_loops(cfg, &adj, &depth_first(cfg, &adj));
    let mut depth = vec![0u32; dag.num_vertices()];
    for l in &loops.loops {
        for v in &l.body {
            depth[v.index()] += 1;
        }
    }
    let body_of = |header: BlockId| loops.loop_of(header).map(|l| &l.body[..]);
    let mut region_of = vec![None; dag.num_vertices()];
    for (i, r) in regions.iter().enumerate() {
        for v in &r.blocks {
            region_of[v.index()] = Some(i);
        }
    }
    for e in cfg.edge_ids() {
        let Some((exit, _)) = dag.cfg_edge_role(e).segment_break() else { continue };
        let edge = cfg.edge(e);
        let region = region_of.get(edge.from.index()).copied().flatten();
        if region.is_none() || region != region_of.get(edge.to.index()).copied().flatten() || !usable(exit) {
            continue;
        }
        let in_region = |v: BlockId| region_of.get(v.index()).copied().flatten() == region;
        // A cut edge's target heads no loop: every start counts as outside.
        let own = body_of(edge.to).filter(|_| matches!(dag.cfg_edge_role(e), CfgEdgeRole::Back { .. }));
        let inside = |v: BlockId| own.is_some_and(|body| body.binary_search(&v).is_ok());
        out[e.index()] = paths_ending_at(dag, exit, &in_region, &inside, &depth, limit, usable);
    }
    out
}

/// The DAG paths that start with a segment start (loop header or cut target) satisfying `starts_in` and end
/// with the segment-ending edge `exit`, through `usable` edges only, ordered as the module docs say (`inside`:
/// whether a start lies in the back edge's own loop), at most `limit`.
fn paths_ending_at(
    dag: &PathDag,
    exit: DagEdgeId,
    starts_in: &dyn Fn(BlockId) -> bool,
    inside: &dyn Fn(BlockId) -> bool,
    depth: &[u32],
    limit: usize,
    usable: &dyn Fn(DagEdgeId) -> bool,
) -> Vec<Vec<DagEdgeId>> {
    let last = dag.edge(exit).from;
    // Paths from each vertex to `last`, saturating above `limit` (only "fits or not" matters).
    let mut to_last = vec![0usize; dag.num_vertices()];
    to_last[last.index()] = 1;
    let step = |d: DagEdgeId, v: BlockId| {
        let w = dag.edge(d).to;
        (w != v && usable(d)).then_some(w)
    };
    for &v in dag.topological_order().iter().rev() {
        if v == last {
            continue;
        }
        let n = dag
            .out_edges(v)
            .iter()
            .filter_map(|&d| step(d, v))
            .fold(0usize, |acc, w| acc.saturating_add(to_last[w.index()]));
        to_last[v.index()] = n.min(limit + 1);
    }
    let mut starts: Vec<DagEdgeId> = dag
        .out_edges(dag.entry())
        .iter()
        .copied()
        .filter(|&d| {
            let s = dag.edge(d);
            s.kind.starts_segment() && s.to != dag.entry() && usable(d) && starts_in(s.to) && to_last[s.to.index()] > 0
        })
        .collect();
    starts.sort_by_key(|&d| {
        let v = dag.edge(d).to;
        (!inside(v), std::cmp::Reverse(depth[v.index()]), d)
    });
    let mut found = Vec::new();
    for start in starts {
        let s = dag.edge(start).to;
        if found.len() + to_last[s.index()] > limit {
            break;
        }
        // Depth-first over the (few) paths from s to `last`.
        let mut stack = vec![(s, vec![start])];
        while let Some((v, path)) = stack.pop() {
            if v == last {
                let mut path = path;
                path.push(exit);
                found.push(path);
                continue;
            }
            for &d in dag.out_edges(v).iter().rev() {
                if let Some(w) = step(d, v).filter(|w| to_last[w.index()] > 0) {
                    let mut longer = path.clone();
                    longer.push(d);
                    stack.push((w, longer));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ball_larus::dag::CfgEdgeRole;
    use crate::ball_larus::regenerate::{decode, to_cfg_path, PathEnd, PathStart};
    use crate::graph::{test_cfg, EdgeId};
    use crate::promotion::promotion_regions;
    use proptest::prelude::*;

    fn plan(cfg: &Cfg, limit: usize) -> (PathDag, Numbering, Vec<Vec<u128>>) {
        let adj = cfg.adjacency();
        let dag = PathDag::build(cfg, &adj, &depth_first(cfg, &adj));
        let numbering = Numbering::compute(&dag).expect("small graph");
        let regions = promotion_regions(cfg, &vec![false; cfg.num_vertices()]);
        let paths = promoted_paths(cfg, &dag, &numbering, &regions, limit);
        (dag, numbering, paths)
    }

    /// The blocks of path `r`, and the cfg edge it starts after.
    fn blocks_of(dag: &PathDag, numbering: &Numbering, r: u128) -> (PathStart, Vec<u32>, PathEnd) {
        let p = to_cfg_path(dag, &decode(dag, numbering, r).expect("in range")).expect("valid");
        (p.start, p.blocks.iter().map(|b| b.0).collect(), p.end)
    }

    /// 0 → 1 (outer header) → 2 (inner header) ⇄ 3, 2 → 4 → 1, 1 → 5 → EXIT; edges in that order, so the
    /// inner back edge 3 → 2 is edge 3 and the outer one 4 → 1 is edge 5.
    fn nest() -> Cfg {
        test_cfg(6, &[(0, 1), (1, 2), (2, 3), (3, 2), (2, 4), (4, 1), (1, 5)], &[5])
    }

    /// Two sibling loops in an outer loop, a diamond between them: 0 → 1 (outer header) → 2 (A) ⇄ 3, 2 → 4,
    /// 4 → 5 → 6 and 4 → 6, 6 → 7 (B) ⇄ 8, 7 → 9 → 1, 1 → 10 → EXIT. B's back edge 8 → 7 is ended by its own
    /// iterations (7 → 8, from B's restart), by A's restart (two paths through the diamond into B's first
    /// iteration) and by the outer header's.
    #[test]
    fn a_loop_tests_its_own_iterations_before_a_sibling_loops_first_iteration_paths() {
        let g = test_cfg(
            11,
            &[
                (0, 1),
                (1, 2),
                (2, 3),
                (3, 2),
                (2, 4),
                (4, 5),
                (5, 6),
                (4, 6),
                (6, 7),
                (7, 8),
                (8, 7),
                (7, 9),
                (9, 1),
                (1, 10),
            ],
            &[10],
        );
        let (a_back, b_back) = (EdgeId(3), EdgeId(10));
        let (dag, numbering, paths) = plan(&g, 2);
        let got: Vec<_> = paths[b_back.index()].iter().map(|&r| blocks_of(&dag, &numbering, r)).collect();
        // A's restart (as deep as B's) has two paths: with B's own, over the limit, so they are not tested.
        assert_eq!(got, vec![(PathStart::LoopHeader { back: b_back }, vec![7, 8], PathEnd::BackEdge { back: b_back })]);
        let (dag, numbering, paths) = plan(&g, 3);
        let got: Vec<_> = paths[b_back.index()].iter().map(|&r| blocks_of(&dag, &numbering, r).0).collect();
        assert_eq!(
            got,
            vec![
                PathStart::LoopHeader { back: b_back },
                PathStart::LoopHeader { back: a_back },
                PathStart::LoopHeader { back: a_back }
            ]
        );
    }

    #[test]
    fn a_nest_tests_the_path_from_the_inner_header_first() {
        let g = nest();
        let (dag, numbering, paths) = plan(&g, 2);
        let (inner, outer) = (EdgeId(3), EdgeId(5));
        // Inner back edge: 2 → 3 started at the inner header (depth 2), then 1 → 2 → 3 from the outer one.
        let got: Vec<_> = paths[inner.index()].iter().map(|&r| blocks_of(&dag, &numbering, r)).collect();
        assert_eq!(
            got,
            vec![
                (PathStart::LoopHeader { back: inner }, vec![2, 3], PathEnd::BackEdge { back: inner }),
                (PathStart::LoopHeader { back: outer }, vec![1, 2, 3], PathEnd::BackEdge { back: inner }),
            ]
        );
        // Outer back edge: 2 → 4 (the inner loop's exit), then 1 → 2 → 4 (an inner loop that never iterated).
        let got: Vec<_> = paths[outer.index()].iter().map(|&r| blocks_of(&dag, &numbering, r)).collect();
        assert_eq!(
            got,
            vec![
                (PathStart::LoopHeader { back: inner }, vec![2, 4], PathEnd::BackEdge { back: outer }),
                (PathStart::LoopHeader { back: outer }, vec![1, 2, 4], PathEnd::BackEdge { back: outer }),
            ]
        );
        // Every other edge ends no path inside the region.
        for e in g.edge_ids().filter(|&e| e != inner && e != outer) {
            assert!(paths[e.index()].is_empty(), "{e:?}");
        }
        // Limit 1: only the innermost start.
        let (_, _, one) = plan(&g, 1);
        assert_eq!(one[inner.index()], paths[inner.index()][..1]);
        assert_eq!(one[outer.index()], paths[outer.index()][..1]);
    }

    #[test]
    fn paths_through_an_unusable_edge_are_not_candidates() {
        // In the nest, 2 → 3 (edge 2, e.g. a call block whose path continues in a callee) cannot be summed:
        // the inner back edge keeps nothing, the outer one its two paths (neither goes through block 3).
        let g = nest();
        let (dag, numbering, all) = plan(&g, 2);
        let body = dag.cfg_edge_role(EdgeId(2));
        let CfgEdgeRole::Real(blocked) = body else { panic!("2 → 3 is a DAG edge: {body:?}") };
        let regions = promotion_regions(&g, &vec![false; g.num_vertices()]);
        let paths = promoted_dag_paths(&g, &dag, &regions, 2, &|d| d != blocked);
        assert!(paths[3].is_empty());
        let sums: Vec<u128> = paths[5].iter().map(|p| p.iter().map(|&d| numbering.val(d)).sum()).collect();
        assert_eq!(sums, all[5]);
    }

    #[test]
    fn a_body_with_more_paths_than_the_limit_is_left_to_memory() {
        // 0 → 1 (header) → {2, 3} → 4 → 1 twice over: 1 → 2|3 → 4 → 5|6 → 7 → 1, and 1 → 8 → EXIT.
        let g = test_cfg(
            9,
            &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (4, 6), (5, 7), (6, 7), (7, 1), (1, 8)],
            &[8],
        );
        let back = EdgeId(9);
        assert!(plan(&g, 3).2[back.index()].is_empty(), "four paths through the body, limit 3");
        let (dag, numbering, paths) = plan(&g, 4);
        let mut got: Vec<Vec<u32>> = paths[back.index()].iter().map(|&r| blocks_of(&dag, &numbering, r).1).collect();
        got.sort();
        assert_eq!(got, vec![vec![1, 2, 4, 5, 7], vec![1, 2, 4, 6, 7], vec![1, 3, 4, 5, 7], vec![1, 3, 4, 6, 7]]);
    }

    #[test]
    fn a_loop_outside_every_region_gets_nothing() {
        // 0 → 1 ⇄ 2, 1 → EXIT, and no region (block 2 is blocked).
        let g = test_cfg(3, &[(0, 1), (1, 2), (2, 1)], &[1]);
        let adj = g.adjacency();
        let dag = PathDag::build(&g, &adj, &depth_first(&g, &adj));
        let numbering = Numbering::compute(&dag).expect("small");
        let regions = promotion_regions(&g, &[false, false, true]);
        assert!(regions.is_empty());
        assert!(promoted_paths(&g, &dag, &numbering, &regions, 4).iter().all(|p| p.is_empty()));
    }

    fn arbitrary() -> impl Strategy<Value = (Cfg, usize)> {
        (2u32..9)
            .prop_flat_map(|n| (Just(n), prop::collection::vec((0..n, 0..n), 1..16), 1..4usize, 0..4usize))
            .prop_map(|(n, branches, returns, limit)| {
                let returns: Vec<u32> = (0..returns as u32).map(|i| n - 1 - i.min(n - 1)).collect();
                (test_cfg(n, &branches, &returns), limit)
            })
    }

    proptest! {
        /// Brute force over every path number: the candidates of a back edge are distinct paths that end with it
        /// and start at a reset in its region, within the limit; a start is taken with all its paths or not at
        /// all; and when all such paths fit the limit, all are listed.
        #[test]
        fn candidates_are_exactly_the_region_paths((g, limit) in arbitrary()) {
            let adj = g.adjacency();
            let dag = PathDag::build(&g, &adj, &depth_first(&g, &adj));
            let Ok(numbering) = Numbering::compute(&dag) else { return Ok(()) };
            prop_assume!(numbering.num_paths() <= 4096);
            let regions = promotion_regions(&g, &vec![false; g.num_vertices()]);
            let paths = promoted_paths(&g, &dag, &numbering, &regions, limit);
            let region_of = |v: BlockId| regions.iter().position(|r| r.blocks.contains(&v));
            let start_block = |s: PathStart| match s {
                PathStart::LoopHeader { back } => Some(g.edge(back).to),
                PathStart::AfterCut { edge } => Some(g.edge(edge).to),
                PathStart::Entry => None,
            };
            for e in g.edge_ids() {
                let listed = &paths[e.index()];
                prop_assert!(listed.len() <= limit);
                let edge = g.edge(e);
                let region = region_of(edge.from).filter(|_| region_of(edge.from) == region_of(edge.to));
                let all: Vec<(u128, PathStart)> = (0..numbering.num_paths())
                    .filter_map(|r| {
                        let p = to_cfg_path(&dag, &decode(&dag, &numbering, r).ok()?).ok()?;
                        let ends_here = matches!(p.end, PathEnd::BackEdge { back } | PathEnd::Cut { edge: back } if back == e);
                        let start = start_block(p.start).filter(|&s| s != dag.entry());
                        (ends_here && region.is_some() && start.is_some_and(|s| region_of(s) == region))
                            .then_some((r, p.start))
                    })
                    .collect();
                for r in listed {
                    prop_assert!(all.iter().any(|(x, _)| x == r), "{} is no region path of {:?}", r, e);
                }
                let mut distinct = listed.clone();
                distinct.sort();
                distinct.dedup();
                prop_assert_eq!(distinct.len(), listed.len());
                for (_, s) in all.iter().filter(|(r, _)| listed.contains(r)) {
                    let from_s = all.iter().filter(|(_, t)| t == s);
                    prop_assert!(from_s.clone().all(|(r, _)| listed.contains(r)), "start {:?} taken in part", s);
                }
                if all.len() <= limit {
                    prop_assert_eq!(listed.len(), all.len());
                }
            }
        }
    }
}
