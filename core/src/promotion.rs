//! Where counter updates may live in registers for a while: loops that nothing can observe from inside.
//!
//! LLVM's instrumentation keeps a loop's counter updates in a register and adds them to memory at the loop's
//! exits (`PGOCounterPromoter`), and accepts losing that part of the count when a call in the loop ends the
//! process or longjmps. pathprof promotes only where nothing is lost: a *region* is a union of natural loops
//! (BL94 §5, [`crate::loops`]) none of whose blocks may leave the activation abnormally or let the profile be
//! read — no call that may not return (`exit`, `longjmp`, exceptions, `fork`, an explicit dump): the caller marks
//! those blocks `blocked` — and that has at least one exit. Updates in a region accumulate in a function-local
//! slot that is added to the counter on every edge leaving the region (its [`PromotionRegion::exits`]: branch
//! edges out of it and returns from inside it), so when the activation leaves the region — the only way it can
//! end or be observed — every count is in memory again.
//!
//! Regions are maximal: a loop that qualifies is taken whole, loops nested in it go with it, and loops that
//! overlap (irreducible flow, see [`crate::loops`]) are merged into one region. A loop with a blocked block is
//! not a region, but the loops nested in it that avoid the blocked blocks still can be. A loop with no exit (left
//! only by ending the program, which is a blocked call inside it) is never a region.

use crate::dfs::depth_first;
use crate::graph::{BlockId, Cfg, EdgeId, EdgeKind};
use crate::loops::natural_loops;

/// A set of loops whose counter updates may be promoted, and the edges where the promoted counts go back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromotionRegion {
    /// The blocks of the region, sorted.
    pub blocks: Vec<BlockId>,
    /// Every edge from a region block to a block outside it (a `Branch`) or to EXIT (a `Return`), in `EdgeId`
    /// order. There is no `Termination` edge among them: such a block would be blocked.
    pub exits: Vec<EdgeId>,
}

/// The maximal promotion regions of `cfg`; `blocked[v]` marks blocks with a point where the activation may end
/// abnormally or the profile may be read. Deterministic, sorted by first block.
pub fn promotion_regions(cfg: &Cfg, blocked: &[bool]) -> Vec<PromotionRegion> {
    let adj = cfg.adjacency();
    let dfs = depth_first(cfg, &adj);
    let loops = natural_loops(cfg, &adj, &dfs);
    let n = cfg.num_vertices();
    let qualifies = |body: &[BlockId], exits: &[EdgeId]| {
        body.iter().all(|v| !blocked.get(v.index()).copied().unwrap_or(true))
            && exits.iter().all(|&e| cfg.edge(e).kind != EdgeKind::Termination)
            && !exits.is_empty()
    };
    // Union-find over blocks: every qualifying loop joins its body into one set.
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(parent: &mut [usize], mut v: usize) -> usize {
        while parent[v] != v {
            parent[v] = parent[parent[v]];
            v = parent[v];
        }
        v
    }
    let mut in_region = vec![false; n];
    for l in loops.loops.iter().filter(|l| qualifies(&l.body, &l.exits)) {
        let root = find(&mut parent, l.header.index());
        for v in &l.body {
            in_region[v.index()] = true;
            let r = find(&mut parent, v.index());
            if r != root {
                parent[r] = root;
            }
        }
    }
    let mut by_root: Vec<Vec<BlockId>> = vec![Vec::new(); n];
    for (v, _) in in_region.iter().enumerate().filter(|(_, &inside)| inside) {
        let r = find(&mut parent, v);
        by_root[r].push(BlockId(v as u32));
    }
    let mut regions: Vec<PromotionRegion> = by_root
        .into_iter()
        .filter(|blocks| !blocks.is_empty())
        .map(|blocks| {
            let mut exits: Vec<EdgeId> = blocks
                .iter()
                .flat_map(|&v| adj.out_edges(v).iter().copied())
                .filter(|&e| blocks.binary_search(&cfg.edge(e).to).is_err())
                .collect();
            exits.sort();
            PromotionRegion { blocks, exits }
        })
        .collect();
    regions.sort_by_key(|r| r.blocks[0]);
    regions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Edge;
    use proptest::prelude::*;

    fn cfg(n: u32, branches: &[(u32, u32)], returns: &[u32]) -> Cfg {
        let exit = BlockId(n);
        let mut edges = Vec::new();
        for (i, &(f, t)) in branches.iter().enumerate() {
            edges.push(Edge { from: BlockId(f), to: BlockId(t), kind: EdgeKind::Branch { succ: i as u32 } });
        }
        for &f in returns {
            edges.push(Edge { from: BlockId(f), to: exit, kind: EdgeKind::Return });
        }
        edges.push(Edge { from: exit, to: BlockId(0), kind: EdgeKind::ExitToEntry });
        Cfg::new(n, edges).expect("valid CFG")
    }

    fn ids(v: &[u32]) -> Vec<BlockId> {
        v.iter().map(|&b| BlockId(b)).collect()
    }

    /// 0 → 1 (outer header) → 2 (inner header) ⇄ 3, 2 → 4 → 1, 1 → 5 → EXIT.
    fn nest() -> Cfg {
        cfg(6, &[(0, 1), (1, 2), (2, 3), (3, 2), (2, 4), (4, 1), (1, 5)], &[5])
    }

    #[test]
    fn a_call_free_nest_is_one_region_left_at_the_outer_exit() {
        let g = nest();
        let r = promotion_regions(&g, &[false; 6]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].blocks, ids(&[1, 2, 3, 4]));
        // The only edge out of {1,2,3,4} is 1 → 5 (edge 6).
        assert_eq!(r[0].exits, vec![EdgeId(6)]);
    }

    #[test]
    fn a_blocked_block_of_the_outer_loop_leaves_the_inner_loop_alone() {
        let g = nest();
        let mut blocked = [false; 6];
        blocked[4] = true; // a call that may not return, after the inner loop
        let r = promotion_regions(&g, &blocked);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].blocks, ids(&[2, 3]));
        assert_eq!(r[0].exits, vec![EdgeId(4)]); // 2 → 4
        blocked[3] = true; // and one inside the inner loop: nothing qualifies
        assert!(promotion_regions(&g, &blocked).is_empty());
    }

    #[test]
    fn a_return_from_inside_the_loop_is_an_exit_and_a_loop_without_exit_is_none() {
        // 0 → 1 ⇄ 2, 2 → EXIT (return from inside the loop).
        let g = cfg(3, &[(0, 1), (1, 2), (2, 1)], &[2]);
        let r = promotion_regions(&g, &[false; 3]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].blocks, ids(&[1, 2]));
        assert_eq!(r[0].exits.iter().map(|&e| g.edge(e).kind).collect::<Vec<_>>(), vec![EdgeKind::Return]);
        // 0 → 1 ⇄ 2 and 0 → EXIT: the loop is never left.
        let g = cfg(3, &[(0, 1), (1, 2), (2, 1)], &[0]);
        assert!(promotion_regions(&g, &[false; 3]).is_empty());
    }

    #[test]
    fn overlapping_loops_of_irreducible_flow_merge() {
        // 0 → 1, 0 → 2, 1 ⇄ 2, 2 → 3 → EXIT: two loops (headers 1 and 2 by DFS) over the same cycle.
        let g = cfg(4, &[(0, 1), (0, 2), (1, 2), (2, 1), (2, 3)], &[3]);
        let r = promotion_regions(&g, &[false; 4]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].blocks, ids(&[1, 2]));
        assert_eq!(r[0].exits, vec![EdgeId(4)]);
    }

    fn arbitrary() -> impl Strategy<Value = (Cfg, Vec<bool>)> {
        (2u32..9)
            .prop_flat_map(|n| {
                (
                    Just(n),
                    prop::collection::vec((0..n, 0..n), 1..18),
                    prop::collection::vec(0..n, 1..3),
                    prop::collection::vec(prop::bool::weighted(0.2), n as usize),
                )
            })
            .prop_map(|(n, branches, returns, blocked)| (cfg(n, &branches, &returns), blocked))
    }

    proptest! {
        /// Regions are disjoint, avoid blocked blocks, are unions of natural loops that qualify, contain every
        /// qualifying loop, and list exactly the edges that leave them.
        #[test]
        fn regions_are_the_maximal_unions_of_qualifying_loops((g, blocked) in arbitrary()) {
            let adj = g.adjacency();
            let loops = natural_loops(&g, &adj, &depth_first(&g, &adj));
            let regions = promotion_regions(&g, &blocked);
            let mut owner = vec![None; g.num_vertices()];
            for (i, r) in regions.iter().enumerate() {
                for &v in &r.blocks {
                    prop_assert!(owner[v.index()].is_none(), "regions overlap at {:?}", v);
                    prop_assert!(!blocked[v.index()]);
                    owner[v.index()] = Some(i);
                }
                let leaving: Vec<EdgeId> = g.edge_ids()
                    .filter(|&e| r.blocks.contains(&g.edge(e).from) && !r.blocks.contains(&g.edge(e).to))
                    .collect();
                prop_assert_eq!(&r.exits, &leaving);
                prop_assert!(!r.exits.is_empty());
                prop_assert!(r.exits.iter().all(|&e| g.edge(e).kind != EdgeKind::Termination));
            }
            for l in &loops.loops {
                let free = l.body.iter().all(|v| !blocked[v.index()]) && !l.exits.is_empty();
                let owners: Vec<_> = l.body.iter().map(|v| owner[v.index()]).collect();
                if free {
                    prop_assert!(owners.iter().all(|o| o.is_some() && *o == owners[0]), "qualifying loop {:?} split", l.header);
                }
            }
            for (i, r) in regions.iter().enumerate() {
                for &v in &r.blocks {
                    let covered = loops.loops.iter().any(|l| {
                        l.contains(v) && l.body.iter().all(|w| owner[w.index()] == Some(i))
                    });
                    prop_assert!(covered, "{:?} is in a region but in no qualifying loop of it", v);
                }
            }
        }
    }
}
