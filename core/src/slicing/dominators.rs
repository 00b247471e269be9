//! Immediate dominators of a [`Cfg`] by the iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast
//! Dominance Algorithm", 2001): intersect the predecessors' dominator-tree paths, in reverse postorder, until
//! nothing changes. Slicing runs it on the reversed graph to get postdominators ([`super::postdom`]).
//!
//! The search and its reverse postorder are [`crate::dfs::depth_first`]'s, so the `ExitToEntry` edge is ignored
//! and vertices the entry does not reach have no immediate dominator.

use crate::dfs::depth_first;
use crate::graph::{Adjacency, BlockId, Cfg, EdgeKind};

/// Immediate dominators: `idom[v]` for every vertex the entry reaches, `None` for the entry and the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DominatorTree {
    idom: Vec<Option<BlockId>>,
}

impl DominatorTree {
    /// The immediate dominator of `v` (`None` for the entry and for vertices the entry does not reach).
    pub fn idom(&self, v: BlockId) -> Option<BlockId> {
        self.idom.get(v.index()).copied().flatten()
    }
}

/// The dominator tree of `cfg` from its entry; `adj` must be `cfg.adjacency()`. O(|E| · depth) per pass, few
/// passes in practice (two on reducible graphs).
pub fn dominator_tree(cfg: &Cfg, adj: &Adjacency) -> DominatorTree {
    let dfs = depth_first(cfg, adj);
    let rpo = dfs.reverse_postorder();
    let pos = dfs.rpo_index();
    // idom in reverse-postorder positions; usize::MAX = not yet known
    const UNKNOWN: usize = usize::MAX;
    let mut idom = vec![UNKNOWN; rpo.len()];
    if rpo.is_empty() {
        return DominatorTree { idom: vec![None; cfg.num_vertices()] };
    }
    idom[0] = 0;
    let intersect = |idom: &[usize], mut a: usize, mut b: usize| {
        while a != b {
            while a > b {
                a = idom[a];
            }
            while b > a {
                b = idom[b];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for (i, &v) in rpo.iter().enumerate().skip(1) {
            let mut new = UNKNOWN;
            for &e in adj.in_edges(v) {
                let edge = cfg.edge(e);
                if edge.kind == EdgeKind::ExitToEntry {
                    continue;
                }
                let Some(p) = pos[edge.from.index()] else { continue };
                if idom[p] == UNKNOWN {
                    continue;
                }
                new = if new == UNKNOWN { p } else { intersect(&idom, p, new) };
            }
            if new != idom[i] {
                idom[i] = new;
                changed = true;
            }
        }
    }
    let mut out = vec![None; cfg.num_vertices()];
    for (i, &v) in rpo.iter().enumerate().skip(1) {
        out[v.index()] = Some(rpo[idom[i]]);
    }
    DominatorTree { idom: out }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_cfg;

    #[test]
    fn diamond_and_loop() {
        // 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 1 (loop), 3 -> EXIT; 4 = EXIT
        let g = test_cfg(4, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 1)], &[3]);
        let d = dominator_tree(&g, &g.adjacency());
        let idom: Vec<Option<u32>> = g.vertices().map(|v| d.idom(v).map(|b| b.0)).collect();
        assert_eq!(idom, vec![None, Some(0), Some(0), Some(0), Some(3)]);
    }

    #[test]
    fn irreducible_and_unreachable() {
        // 0 -> 1, 0 -> 2, 1 <-> 2, 2 -> EXIT, 3 unreachable
        let g = test_cfg(4, &[(0, 1), (0, 2), (1, 2), (2, 1), (3, 2)], &[2]);
        let d = dominator_tree(&g, &g.adjacency());
        let idom: Vec<Option<u32>> = g.vertices().map(|v| d.idom(v).map(|b| b.0)).collect();
        assert_eq!(idom, vec![None, Some(0), Some(0), None, Some(2)]);
    }
}
