//! Iterative depth-first search of a [`Cfg`] from the entry, classifying back edges.
//!
//! Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §5: the static weighting starts
//! with a depth-first search from the root that identifies back edges; "EXIT → root is not treated as a backedge
//! even though it is identified as such by depth-first search". Ball & Larus, "Efficient Path Profiling",
//! MICRO-29, 1996, §3.3 removes the same back edges to turn the CFG into a DAG.
//!
//! Invariant: the search starts at the entry, follows out-edges in `EdgeId` order and never follows the
//! `ExitToEntry` edge, so a back edge — an edge whose target is on the DFS stack when the edge is examined — is
//! never EXIT→entry, and removing all back edges from the reachable part of the graph leaves a DAG whose
//! topological order is [`DfsInfo::reverse_postorder`].
//!
//! The "on the stack" test (rather than "target dominates source") makes the classification total on
//! irreducible graphs: every directed cycle through reachable vertices contains at least one back edge. Vertices
//! unreachable from the entry (dead blocks LLVM did not delete, or blocks reached only through EXIT→entry) are not
//! visited; they appear in neither order, have `reachable == false`, and none of their out-edges is classified.

use crate::graph::{Adjacency, BlockId, Cfg, EdgeId, EdgeKind};

/// The result of [`depth_first`]: visit orders, back edges and reachability.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DfsInfo {
    /// Vertices in the order the search first reached them (entry first); reachable vertices only.
    pub preorder: Vec<BlockId>,
    /// Vertices in the order the search finished them (entry last); reachable vertices only.
    pub postorder: Vec<BlockId>,
    /// Back edges (target on the DFS stack when examined), sorted by `EdgeId`; never the `ExitToEntry` edge.
    /// Self-loops on reachable blocks are back edges.
    pub back_edges: Vec<EdgeId>,
    /// Per vertex (EXIT included, indexed by `BlockId::index`): whether the entry reaches it without using the
    /// `ExitToEntry` edge.
    pub reachable: Vec<bool>,
}

impl DfsInfo {
    /// Reverse postorder: a topological order of the reachable part of the graph with back edges and the
    /// `ExitToEntry` edge removed (entry first).
    pub fn reverse_postorder(&self) -> Vec<BlockId> {
        self.postorder.iter().rev().copied().collect()
    }

    /// Whether `e` is a back edge (binary search in the sorted [`DfsInfo::back_edges`]).
    pub fn is_back_edge(&self, e: EdgeId) -> bool {
        self.back_edges.binary_search(&e).is_ok()
    }

    /// A per-edge mask of back edges for a graph with `num_edges` edges (`true` = back edge).
    pub fn back_edge_mask(&self, num_edges: usize) -> Vec<bool> {
        let mut mask = vec![false; num_edges];
        for &e in &self.back_edges {
            if let Some(m) = mask.get_mut(e.index()) {
                *m = true;
            }
        }
        mask
    }

    /// Whether the entry reaches `v` (false for out-of-range vertices).
    pub fn is_reachable(&self, v: BlockId) -> bool {
        self.reachable.get(v.index()).copied().unwrap_or(false)
    }

    /// Per-vertex position in [`DfsInfo::reverse_postorder`], `None` for unreachable vertices.
    pub fn rpo_index(&self) -> Vec<Option<usize>> {
        let mut idx = vec![None; self.reachable.len()];
        let n = self.postorder.len();
        for (i, &v) in self.postorder.iter().enumerate() {
            idx[v.index()] = Some(n - 1 - i);
        }
        idx
    }
}

/// Depth-first search from the entry following out-edges in `EdgeId` order and ignoring the `ExitToEntry` edge.
///
/// Iterative (explicit stack), O(|V| + |E|), deterministic, and total on every graph accepted by [`Cfg::new`].
/// `adj` must be `cfg.adjacency()`.
pub fn depth_first(cfg: &Cfg, adj: &Adjacency) -> DfsInfo {
    const UNSEEN: u8 = 0;
    const ON_STACK: u8 = 1;
    const DONE: u8 = 2;

    let n = cfg.num_vertices();
    let mut state = vec![UNSEEN; n];
    let mut preorder = Vec::with_capacity(n);
    let mut postorder = Vec::with_capacity(n);
    let mut back_edges = Vec::new();
    // (vertex, position of the next out-edge to examine)
    let mut stack: Vec<(BlockId, usize)> = Vec::new();

    let entry = cfg.entry();
    state[entry.index()] = ON_STACK;
    preorder.push(entry);
    stack.push((entry, 0));

    while let Some(top) = stack.last_mut() {
        let (v, next) = *top;
        let outs = adj.out_edges(v);
        if next >= outs.len() {
            state[v.index()] = DONE;
            postorder.push(v);
            stack.pop();
            continue;
        }
        top.1 += 1;
        let e = outs[next];
        let edge = cfg.edge(e);
        if edge.kind == EdgeKind::ExitToEntry {
            continue;
        }
        let w = edge.to;
        match state[w.index()] {
            UNSEEN => {
                state[w.index()] = ON_STACK;
                preorder.push(w);
                stack.push((w, 0));
            }
            ON_STACK => back_edges.push(e),
            _ => {}
        }
    }

    back_edges.sort_unstable();
    let reachable = state.iter().map(|&s| s != UNSEEN).collect();
    DfsInfo { preorder, postorder, back_edges, reachable }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_cfg;

    fn ids(v: &[u32]) -> Vec<BlockId> {
        v.iter().map(|&b| BlockId(b)).collect()
    }

    #[test]
    fn straight_line_has_no_back_edges() {
        let g = test_cfg(3, &[(0, 1), (1, 2)], &[2]);
        let d = depth_first(&g, &g.adjacency());
        assert_eq!(d.preorder, ids(&[0, 1, 2, 3]));
        assert_eq!(d.postorder, ids(&[3, 2, 1, 0]));
        assert!(d.back_edges.is_empty(), "EXIT->entry must not be a back edge");
        assert!(d.reachable.iter().all(|&r| r));
    }

    #[test]
    fn ball_larus_1994_g1_back_edge_is_c_to_p() {
        // P=0 Q=1 A=2 B=3 R=4 C=5, EXIT=6
        let g = test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 0)], &[0, 4]);
        let d = depth_first(&g, &g.adjacency());
        assert_eq!(d.back_edges, vec![EdgeId(6)]);
        let rpo = d.reverse_postorder();
        assert_eq!(rpo[0], BlockId(0));
        let pos = d.rpo_index();
        for e in g.edge_ids() {
            let ed = g.edge(e);
            if d.is_back_edge(e) || ed.kind == EdgeKind::ExitToEntry {
                continue;
            }
            assert!(pos[ed.from.index()] < pos[ed.to.index()], "{e} violates the topological order");
        }
    }

    #[test]
    fn self_loop_and_unreachable_and_irreducible() {
        // 0 -> 1, 0 -> 2, 1 <-> 2 (irreducible), 1 -> 1 (self-loop), 3 unreachable with a self-loop, 2 -> EXIT
        let g = test_cfg(4, &[(0, 1), (0, 2), (1, 2), (2, 1), (1, 1), (3, 3), (3, 0)], &[2]);
        let d = depth_first(&g, &g.adjacency());
        assert_eq!(d.reachable, vec![true, true, true, false, true]);
        // DFS: 0 -> 1 (e0) -> 2 (e2) -> 1 is back (e3); 1 -> 1 back (e4); e5, e6 are unclassified
        assert_eq!(d.back_edges, vec![EdgeId(3), EdgeId(4)]);
        assert!(!d.preorder.contains(&BlockId(3)));
    }

    #[test]
    fn deep_chain_does_not_overflow_the_stack() {
        let n = 200_000u32;
        let edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        let g = test_cfg(n, &edges, &[n - 1]);
        let d = depth_first(&g, &g.adjacency());
        assert_eq!(d.preorder.len(), n as usize + 1);
    }
}
