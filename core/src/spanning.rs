//! Maximum-weight spanning forest with forced edges (Kruskal with union-find).
//!
//! Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §3.2: an edge-counter placement
//! solves Eprof(Ecnt) iff the uninstrumented edges contain no undirected cycle, and it has minimum cost for a
//! weighting iff the uninstrumented edges form a *maximum* spanning tree (Knuth & Stevenson, "Optimal measurement
//! points for program frequency counts", BIT 13, 1973). The tree is seeded with edges that must not carry code
//! (EXIT→entry, virtual termination edges, uninstrumentable edges). Ball & Larus, "Efficient Path Profiling",
//! MICRO-29, 1996, §3.4 uses the same construction on the path-profiling DAG.
//!
//! Invariant: the returned edge set is acyclic (as an undirected multigraph), contains every forced edge, and is
//! a maximum-weight spanning forest among the spanning forests that contain the forced edges; ties are broken
//! by the lower edge index, so the result is a pure function of the input. Edge direction is irrelevant,
//! parallel edges are distinct, and a self-loop is never a tree edge.

use crate::graph::{BlockId, Cfg, EdgeId};
use std::cmp::Ordering;

/// Why a spanning tree could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpanningError {
    /// A forced edge would close an undirected cycle with earlier forced edges (or is a self-loop).
    #[error("forced edge {edge} closes a cycle with the other forced edges")]
    ForcedCycle {
        /// The first forced edge (in the given order) that closes a cycle.
        edge: EdgeId,
    },
    /// `weights` does not have one entry per edge.
    #[error("{weights} weights given for {edges} edges")]
    WeightCountMismatch {
        /// Number of edges.
        edges: usize,
        /// Number of weights.
        weights: usize,
    },
    /// An edge names a vertex `>= num_vertices` (plain edge-list interface only).
    #[error("edge {edge} refers to vertex {vertex} but the graph has {num_vertices} vertices")]
    VertexOutOfRange {
        /// The offending edge.
        edge: EdgeId,
        /// The vertex named.
        vertex: BlockId,
        /// Vertices in the graph.
        num_vertices: usize,
    },
    /// A forced edge index is not an edge of the graph.
    #[error("forced edge index {index} is out of range ({edges} edges)")]
    ForcedOutOfRange {
        /// The offending index.
        index: usize,
        /// Number of edges.
        edges: usize,
    },
    /// More vertices or edges than 32-bit ids can name.
    #[error("graph too large for 32-bit ids ({num_vertices} vertices, {edges} edges)")]
    TooLarge {
        /// Vertices requested.
        num_vertices: usize,
        /// Edges given.
        edges: usize,
    },
    /// A weight is NaN, which has no place in a maximum.
    #[error("edge {edge} has a NaN weight")]
    NanWeight {
        /// The offending edge.
        edge: EdgeId,
    },
}

/// A spanning forest of a graph, as a per-edge membership mask; the edges outside it are the *chords*.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanningTree {
    in_tree: Vec<bool>,
}

impl SpanningTree {
    /// Wraps a per-edge membership mask (`true` = tree edge). No acyclicity check is made.
    pub fn from_mask(in_tree: Vec<bool>) -> SpanningTree {
        SpanningTree { in_tree }
    }

    /// Whether `e` is a tree edge (false for ids outside the graph).
    pub fn contains(&self, e: EdgeId) -> bool {
        self.in_tree.get(e.index()).copied().unwrap_or(false)
    }

    /// The chords (non-tree edges) in `EdgeId` order: the edges that get counters in Eprof(Ecnt).
    pub fn chords(&self) -> impl Iterator<Item = EdgeId> + '_ {
        self.in_tree.iter().enumerate().filter(|(_, &t)| !t).map(|(i, _)| EdgeId::from_index(i))
    }

    /// The tree edges in `EdgeId` order.
    pub fn tree_edges(&self) -> impl Iterator<Item = EdgeId> + '_ {
        self.in_tree.iter().enumerate().filter(|(_, &t)| t).map(|(i, _)| EdgeId::from_index(i))
    }

    /// Number of edges of the underlying graph (tree edges plus chords).
    pub fn num_edges(&self) -> usize {
        self.in_tree.len()
    }

    /// The per-edge membership mask.
    pub fn as_mask(&self) -> &[bool] {
        &self.in_tree
    }

    /// Sum of the weights of the tree edges (BL94's cost of the tree); missing weights count as 0.
    pub fn cost(&self, weights: &[f64]) -> f64 {
        self.tree_edges().map(|e| weights.get(e.index()).copied().unwrap_or(0.0)).sum()
    }
}

/// Disjoint-set forest with path compression and union by rank.
#[derive(Clone, Debug)]
pub(crate) struct UnionFind {
    parent: Vec<u32>,
    rank: Vec<u8>,
}

impl UnionFind {
    /// `n` singleton sets `0..n`.
    pub(crate) fn new(n: usize) -> UnionFind {
        UnionFind { parent: (0..n).map(|i| i as u32).collect(), rank: vec![0; n] }
    }

    /// The representative of `x`'s set; compresses the path (two passes, no recursion).
    pub(crate) fn find(&mut self, x: usize) -> usize {
        let mut root = x;
        while self.parent[root] as usize != root {
            root = self.parent[root] as usize;
        }
        let mut cur = x;
        while self.parent[cur] as usize != root {
            let next = self.parent[cur] as usize;
            self.parent[cur] = root as u32;
            cur = next;
        }
        root
    }

    /// Merges the sets of `a` and `b`; returns false (and does nothing) if they were already one set.
    pub(crate) fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        match self.rank[ra].cmp(&self.rank[rb]) {
            Ordering::Less => self.parent[ra] = rb as u32,
            Ordering::Greater => self.parent[rb] = ra as u32,
            Ordering::Equal => {
                self.parent[rb] = ra as u32;
                self.rank[ra] = self.rank[ra].saturating_add(1);
            }
        }
        true
    }
}

/// Maximum-weight spanning forest of a plain undirected multigraph given as an edge list.
///
/// `edges[i] = (from, to)` with both endpoints `< num_vertices`; `weights[i]` is edge `i`'s weight. The edges
/// `forced` (indices into `edges`) are inserted first, in the given order — a repeated index is ignored, an edge
/// that would close a cycle with earlier forced edges (or a forced self-loop) is
/// `Err(SpanningError::ForcedCycle)`. The remaining edges are then considered by decreasing weight, ties by lower
/// index (Kruskal); self-loops are always chords. Returns the per-edge membership mask (`true` = tree edge).
/// O(|E| log |E|).
pub fn max_spanning_tree_of(
    num_vertices: usize,
    edges: &[(BlockId, BlockId)],
    weights: &[f64],
    forced: &[usize],
) -> Result<Vec<bool>, SpanningError> {
    if weights.len() != edges.len() {
        return Err(SpanningError::WeightCountMismatch { edges: edges.len(), weights: weights.len() });
    }
    if u32::try_from(num_vertices).is_err() || u32::try_from(edges.len()).is_err() {
        // Typed ids are u32; a larger graph cannot come from a valid Cfg.
        return Err(SpanningError::TooLarge { num_vertices, edges: edges.len() });
    }
    for (i, &(a, b)) in edges.iter().enumerate() {
        for v in [a, b] {
            if v.index() >= num_vertices {
                return Err(SpanningError::VertexOutOfRange { edge: EdgeId::from_index(i), vertex: v, num_vertices });
            }
        }
        if weights[i].is_nan() {
            return Err(SpanningError::NanWeight { edge: EdgeId::from_index(i) });
        }
    }

    let mut uf = UnionFind::new(num_vertices);
    let mut in_tree = vec![false; edges.len()];
    for &f in forced {
        let Some(&(a, b)) = edges.get(f) else {
            return Err(SpanningError::ForcedOutOfRange { index: f, edges: edges.len() });
        };
        if in_tree[f] {
            continue;
        }
        if !uf.union(a.index(), b.index()) {
            return Err(SpanningError::ForcedCycle { edge: EdgeId::from_index(f) });
        }
        in_tree[f] = true;
    }

    let mut order: Vec<usize> = (0..edges.len()).filter(|&i| !in_tree[i] && edges[i].0 != edges[i].1).collect();
    // NaN was rejected above, so partial_cmp is total here (and treats -0.0 == 0.0).
    order.sort_by(|&x, &y| weights[y].partial_cmp(&weights[x]).unwrap_or(Ordering::Equal).then(x.cmp(&y)));
    for i in order {
        let (a, b) = edges[i];
        if uf.union(a.index(), b.index()) {
            in_tree[i] = true;
        }
    }
    Ok(in_tree)
}

/// Maximum-weight spanning forest of `cfg` (EXIT and all virtual edges included) containing the `forced` edges.
///
/// See [`max_spanning_tree_of`] for the order of insertion, tie-breaking and errors; `weights` has one entry per
/// edge of `cfg`.
pub fn max_spanning_tree(cfg: &Cfg, weights: &[f64], forced: &[EdgeId]) -> Result<SpanningTree, SpanningError> {
    let edges: Vec<(BlockId, BlockId)> = cfg.edges().iter().map(|e| (e.from, e.to)).collect();
    let forced: Vec<usize> = forced.iter().map(|e| e.index()).collect();
    max_spanning_tree_of(cfg.num_vertices(), &edges, weights, &forced).map(SpanningTree::from_mask)
}

/// Number of connected components of the undirected multigraph underlying `cfg` (EXIT and all edges included).
/// A spanning forest of it has `num_vertices - components` edges, so `|E| - |V| + components` chords.
pub fn count_components(cfg: &Cfg) -> usize {
    let mut uf = UnionFind::new(cfg.num_vertices());
    let mut comps = cfg.num_vertices();
    for e in cfg.edges() {
        if uf.union(e.from.index(), e.to.index()) {
            comps -= 1;
        }
    }
    comps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_cfg;
    use proptest::prelude::*;

    fn b(i: u32) -> BlockId {
        BlockId(i)
    }

    #[test]
    fn ball_larus_1994_g1_max_tree_chord_cost_is_21_over_2() {
        // P=0 Q=1 A=2 B=3 R=4 C=5, EXIT=6; edges in this order:
        // e0 P->Q, e1 Q->A, e2 Q->B, e3 A->R, e4 B->R, e5 R->C, e6 C->P, e7 P->EXIT, e8 R->EXIT, e9 EXIT->P
        let g = test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 0)], &[0, 4]);
        let w = [9.5, 4.75, 4.75, 4.75, 4.75, 9.0, 9.0, 0.5, 0.5, 1.0];
        let t = max_spanning_tree(&g, &w, &[g.exit_to_entry()]).unwrap();
        let chords: Vec<EdgeId> = t.chords().collect();
        assert_eq!(chords.len(), 4);
        let chord_cost: f64 = chords.iter().map(|e| w[e.index()]).sum();
        assert_eq!(chord_cost, 10.5);
        assert!(t.contains(EdgeId(9)) && t.contains(EdgeId(0)) && t.contains(EdgeId(5)) && t.contains(EdgeId(6)));
        // ties by lower id: Q->A (e1) and Q->B (e2) win over A->R, B->R
        assert_eq!(chords, vec![EdgeId(3), EdgeId(4), EdgeId(7), EdgeId(8)]);
        assert_eq!(t.tree_edges().count(), 6);
    }

    #[test]
    fn forced_cycle_is_an_error() {
        let edges = [(b(0), b(1)), (b(1), b(0)), (b(1), b(2))];
        let r = max_spanning_tree_of(3, &edges, &[1.0; 3], &[0, 1]);
        assert_eq!(r, Err(SpanningError::ForcedCycle { edge: EdgeId(1) }));
        let r = max_spanning_tree_of(3, &[(b(2), b(2))], &[1.0], &[0]);
        assert_eq!(r, Err(SpanningError::ForcedCycle { edge: EdgeId(0) }));
        // repeated forced edges are not cycles
        let r = max_spanning_tree_of(3, &edges, &[1.0; 3], &[0, 0]).unwrap();
        assert_eq!(r, vec![true, false, true]);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let edges = [(b(0), b(1))];
        assert!(matches!(max_spanning_tree_of(2, &edges, &[], &[]), Err(SpanningError::WeightCountMismatch { .. })));
        assert!(matches!(max_spanning_tree_of(1, &edges, &[1.0], &[]), Err(SpanningError::VertexOutOfRange { .. })));
        assert!(matches!(max_spanning_tree_of(2, &edges, &[1.0], &[3]), Err(SpanningError::ForcedOutOfRange { .. })));
        assert!(matches!(max_spanning_tree_of(2, &edges, &[f64::NAN], &[]), Err(SpanningError::NanWeight { .. })));
    }

    #[test]
    fn self_loops_are_chords_and_forests_are_handled() {
        // two components {0,1} and {2,3}, a self-loop at 0, a parallel edge 2->3
        let edges = [(b(0), b(0)), (b(0), b(1)), (b(2), b(3)), (b(2), b(3))];
        let r = max_spanning_tree_of(4, &edges, &[100.0, 1.0, 1.0, 2.0], &[]).unwrap();
        assert_eq!(r, vec![false, true, false, true]);
    }

    /// All spanning forests (as masks) of a small multigraph containing `forced`, by brute force over subsets.
    fn brute_force_best(n: usize, edges: &[(BlockId, BlockId)], w: &[f64], forced: &[usize]) -> Option<f64> {
        let m = edges.len();
        let comps = {
            let mut uf = UnionFind::new(n);
            let mut c = n;
            for &(a, bb) in edges {
                if uf.union(a.index(), bb.index()) {
                    c -= 1;
                }
            }
            c
        };
        let mut best: Option<f64> = None;
        for mask in 0u32..(1 << m) {
            if forced.iter().any(|&f| mask & (1 << f) == 0) {
                continue;
            }
            if mask.count_ones() as usize != n - comps {
                continue;
            }
            let mut uf = UnionFind::new(n);
            let mut ok = true;
            let mut cost = 0.0;
            for (i, &(a, bb)) in edges.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    if !uf.union(a.index(), bb.index()) {
                        ok = false;
                        break;
                    }
                    cost += w[i];
                }
            }
            if ok {
                best = Some(best.map_or(cost, |x: f64| x.max(cost)));
            }
        }
        best
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn kruskal_matches_brute_force(
            n in 1usize..6,
            raw in prop::collection::vec((0usize..6, 0usize..6, 0u8..8), 0..11),
            nforced in 0usize..3,
        ) {
            let edges: Vec<(BlockId, BlockId)> =
                raw.iter().map(|&(a, c, _)| (BlockId::from_index(a % n), BlockId::from_index(c % n))).collect();
            let w: Vec<f64> = raw.iter().map(|&(_, _, x)| f64::from(x) / 2.0).collect();
            let forced: Vec<usize> = (0..nforced.min(edges.len())).collect();
            match max_spanning_tree_of(n, &edges, &w, &forced) {
                Ok(mask) => {
                    let cost: f64 = mask.iter().zip(&w).filter(|(t, _)| **t).map(|(_, x)| *x).sum();
                    let best = brute_force_best(n, &edges, &w, &forced);
                    prop_assert_eq!(Some(cost), best);
                    for &f in &forced { prop_assert!(mask[f]); }
                }
                Err(SpanningError::ForcedCycle { .. }) => {
                    prop_assert_eq!(brute_force_best(n, &edges, &w, &forced), None);
                }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
    }
}
