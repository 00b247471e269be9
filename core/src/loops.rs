//! Natural loops keyed by loop-entry (header), and their loop-exit edges.
//!
//! Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §5: for a back edge x → y,
//! nat-loop(x → y) = {y} ∪ {w | there is a directed path from w to x that does not include y}; a *loop-entry* is
//! the target of one or more back edges and nat-loop(y) is the union of nat-loop(x → y) over its back edges;
//! loop-exits(y) = {a → b | a ∈ nat-loop(y), b ∉ nat-loop(y)}.
//!
//! Invariant: every [`NaturalLoop`] contains its header, the sources of all its back edges, and only vertices that
//! are reachable from the entry, reachable from the header, and reach a back-edge source without passing through
//! the header; its `exits` are exactly the edges leaving that set. On a reducible graph the loops of distinct
//! headers are disjoint or nested, and the sets are exactly BL94's (the header dominates every such vertex).
//!
//! # Irreducible graphs and dead code
//! Back edges come from [`crate::dfs`] ("target on the DFS stack"), so on an irreducible graph a back edge's
//! target need not dominate its source. BL94's definition would then pull vertices *outside* the cycle into the
//! loop (anything that reaches x while avoiding y, e.g. the entry of `0→1, 0→2, 1⇄2`). pathprof keeps only
//! the vertices also reachable from y, i.e. the vertices on some cycle through the back edges to y: this equals
//! BL94's set whenever y dominates x, and on irreducible graphs yields a strongly connected body whose loops may
//! overlap without nesting (documented, handled by the weighting as an approximation). Vertices unreachable from
//! the entry are never in a loop, since [`crate::dfs`] does not classify their edges.

use crate::dfs::DfsInfo;
use crate::graph::{Adjacency, BlockId, Cfg, EdgeId, EdgeKind};

/// One natural loop: the union of nat-loop(x → y) over the back edges x → y into `header` (BL94 §5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NaturalLoop {
    /// The loop-entry y: the target of the loop's back edges.
    pub header: BlockId,
    /// The back edges x → y into the header, in `EdgeId` order (self-loops included).
    pub back_edges: Vec<EdgeId>,
    /// nat-loop(y), header included, sorted by `BlockId`.
    pub body: Vec<BlockId>,
    /// loop-exits(y): edges a → b with a in the body and b outside, in `EdgeId` order. All kinds are listed,
    /// `Termination` edges included; callers that want only real exits filter by kind.
    pub exits: Vec<EdgeId>,
}

impl NaturalLoop {
    /// Whether `v` is in the loop body (binary search).
    pub fn contains(&self, v: BlockId) -> bool {
        self.body.binary_search(&v).is_ok()
    }
}

/// All natural loops of a CFG, one per loop-entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopInfo {
    /// The loops, sorted by header `BlockId`.
    pub loops: Vec<NaturalLoop>,
    /// Per vertex: index into `loops` of the loop it heads, if it is a loop-entry.
    header_loop: Vec<Option<usize>>,
}

impl LoopInfo {
    /// The loop headed by `header`, if `header` is a loop-entry.
    pub fn loop_of(&self, header: BlockId) -> Option<&NaturalLoop> {
        self.header_loop.get(header.index()).copied().flatten().map(|i| &self.loops[i])
    }

    /// Whether `v` is a loop-entry (the target of a back edge).
    pub fn is_loop_entry(&self, v: BlockId) -> bool {
        self.loop_of(v).is_some()
    }

    /// Indices into `loops`, innermost first: by increasing body size, ties by header id. On a reducible graph
    /// an inner loop's body is a strict subset of its outer loop's, so every loop comes after all loops nested
    /// in it.
    pub fn innermost_first(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.loops.len()).collect();
        order.sort_by_key(|&i| (self.loops[i].body.len(), self.loops[i].header));
        order
    }
}

/// Computes the natural loops of `cfg` from the back edges of `dfs` (which must be `depth_first(cfg, adj)`).
///
/// Iterative; O(L · (|V| + |E|)) for L loop-entries. `ExitToEntry` is never followed. Deterministic.
pub fn natural_loops(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo) -> LoopInfo {
    let n = cfg.num_vertices();
    // Group back edges by target; `back_edges` is sorted by id, so each group stays in id order.
    let mut by_header: Vec<(BlockId, EdgeId)> = dfs.back_edges.iter().map(|&e| (cfg.edge(e).to, e)).collect();
    by_header.sort();

    // Generation stamps avoid clearing per-vertex marks for every loop.
    let mut backward = vec![0u32; n];
    let mut inside = vec![0u32; n];
    let mut header_loop = vec![None; n];
    let mut loops = Vec::new();
    let mut work: Vec<BlockId> = Vec::new();

    let mut i = 0;
    let mut stamp = 0u32;
    while i < by_header.len() {
        let y = by_header[i].0;
        let mut back_edges = Vec::new();
        while i < by_header.len() && by_header[i].0 == y {
            back_edges.push(by_header[i].1);
            i += 1;
        }
        stamp += 1;

        // Backward from the back-edge sources, never entering y: {w | w reaches some x avoiding y}.
        backward[y.index()] = stamp;
        for &e in &back_edges {
            let x = cfg.edge(e).from;
            if backward[x.index()] != stamp {
                backward[x.index()] = stamp;
                work.push(x);
            }
        }
        while let Some(w) = work.pop() {
            for &e in adj.in_edges(w) {
                let edge = cfg.edge(e);
                let u = edge.from;
                if edge.kind == EdgeKind::ExitToEntry || !dfs.is_reachable(u) || backward[u.index()] == stamp {
                    continue;
                }
                backward[u.index()] = stamp;
                work.push(u);
            }
        }

        // Forward from y inside that set: drops vertices that reach the loop without being on a cycle through
        // y (only possible on irreducible graphs).
        let mut body = vec![y];
        inside[y.index()] = stamp;
        work.push(y);
        while let Some(w) = work.pop() {
            for &e in adj.out_edges(w) {
                let edge = cfg.edge(e);
                let t = edge.to;
                if edge.kind == EdgeKind::ExitToEntry || backward[t.index()] != stamp || inside[t.index()] == stamp {
                    continue;
                }
                inside[t.index()] = stamp;
                body.push(t);
                work.push(t);
            }
        }
        body.sort_unstable();

        let mut exits: Vec<EdgeId> = body
            .iter()
            .flat_map(|&v| adj.out_edges(v).iter().copied())
            .filter(|&e| inside[cfg.edge(e).to.index()] != stamp)
            .collect();
        exits.sort_unstable();

        header_loop[y.index()] = Some(loops.len());
        loops.push(NaturalLoop { header: y, back_edges, body, exits });
    }

    LoopInfo { loops, header_loop }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dfs::depth_first;
    use crate::graph::test_cfg;

    fn info(g: &Cfg) -> LoopInfo {
        let adj = g.adjacency();
        let d = depth_first(g, &adj);
        natural_loops(g, &adj, &d)
    }

    fn ids(v: &[u32]) -> Vec<BlockId> {
        v.iter().map(|&b| BlockId(b)).collect()
    }

    #[test]
    fn ball_larus_1994_g1_loop() {
        // P=0 Q=1 A=2 B=3 R=4 C=5, EXIT=6; e7 = P->EXIT, e8 = R->EXIT
        let g = test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 0)], &[0, 4]);
        let li = info(&g);
        assert_eq!(li.loops.len(), 1);
        let l = li.loop_of(BlockId(0)).unwrap();
        assert_eq!(l.body, ids(&[0, 1, 2, 3, 4, 5]));
        assert_eq!(l.back_edges, vec![EdgeId(6)]);
        assert_eq!(l.exits, vec![EdgeId(7), EdgeId(8)]);
    }

    #[test]
    fn nested_loops_with_a_multi_level_exit() {
        // notes A.7 pitfall graph: S=0 O=1 I=2 X=3 L=4, EXIT=5
        // e0 S->O, e1 O->I, e2 I->X, e3 X->I, e4 X->L, e5 L->O, e6 X->EXIT, e7 O->EXIT
        let g = test_cfg(5, &[(0, 1), (1, 2), (2, 3), (3, 2), (3, 4), (4, 1)], &[3, 1]);
        let li = info(&g);
        let outer = li.loop_of(BlockId(1)).unwrap();
        let inner = li.loop_of(BlockId(2)).unwrap();
        assert_eq!(outer.body, ids(&[1, 2, 3, 4]));
        assert_eq!(outer.exits, vec![EdgeId(6), EdgeId(7)]);
        assert_eq!(inner.body, ids(&[2, 3]));
        assert_eq!(inner.exits, vec![EdgeId(4), EdgeId(6)]);
        assert_eq!(li.innermost_first(), vec![1, 0]);
        assert!(!li.is_loop_entry(BlockId(0)));
    }

    #[test]
    fn irreducible_loop_excludes_the_entry() {
        // 0->1, 0->2, 1->2, 2->1, 2->EXIT; DFS makes 2->1 the back edge although 1 does not dominate 2.
        let g = test_cfg(3, &[(0, 1), (0, 2), (1, 2), (2, 1)], &[2]);
        let li = info(&g);
        let l = li.loop_of(BlockId(1)).unwrap();
        assert_eq!(l.body, ids(&[1, 2]));
        assert_eq!(l.exits, vec![EdgeId(4)]);
    }

    #[test]
    fn self_loop_and_unreachable_cycle() {
        // 0 -> 0 (self-loop), 0 -> 1, 2 <-> 3 unreachable, 1 returns
        let g = test_cfg(4, &[(0, 0), (0, 1), (2, 3), (3, 2)], &[1]);
        let li = info(&g);
        assert_eq!(li.loops.len(), 1);
        let l = li.loop_of(BlockId(0)).unwrap();
        assert_eq!(l.body, ids(&[0]));
        assert_eq!(l.exits, vec![EdgeId(1)]);
    }
}
