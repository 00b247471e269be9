//! Vertex (block) profiling with edge counters, Vprof(Ecnt): fewer counters than edge profiling when only block
//! counts are wanted.
//!
//! Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §3.3 (Ball's thesis, 1993,
//! §3.1.3): a set of counted edges Ecnt determines every vertex frequency iff every simple cycle of the uncounted
//! edges E − Ecnt is *pipeless* (edge directions alternate around it). Placement starts from the edge-mode plan
//! (the chords of a maximum spanning tree, [`crate::placement`]) and drops the counter of every chord whose
//! fundamental cycle is pipeless (§3.3.3, Figure 11). Derivation is Figure 8: zero one uncounted edge per
//! independent uncounted cycle and propagate as in edge mode; vertex counts are then right although edge counts
//! on those cycles may not be.
//!
//! # Why no vertex marking
//! Figure 11 also marks the vertices of each accepted cycle and refuses cycles through marked vertices, "to
//! prevent two counter-free pipeless cycles from combining into a simple counter-free piped cycle". With one
//! spanning tree that cannot happen, so pathprof does not mark (and removes a superset of Figure 11's counters):
//! circulating one unit around a simple cycle changes the in-flow of exactly its pipes (by ±1) and of no fork or
//! join; every cycle of tree ∪ removed chords is a ±sum of the removed chords' fundamental cycles; so if each of
//! those changes no in-flow, no sum does, and no simple cycle can have a pipe. The same argument is the
//! derivability test of [`determined`]: a vertex count is fixed by the counters iff no fundamental cycle of the
//! uncounted edges changes its in-flow. Tests check both against brute force (all simple cycles, random runs).
//!
//! Invariant: a [`BlockPlan`]'s counted edges are a subset of its edge plan's chords, and [`determined`] says
//! every vertex is derivable from them.

use crate::graph::{Adjacency, BlockId, Cfg, EdgeId};
use crate::placement::{plan_edge_counters_with_entry_counter, EdgePlan, PlacementError};
use crate::propagate::{derive_counts_with_reentries, PropagateError};
use crate::spanning::UnionFind;

/// Where the block-mode counters go: counter `i` counts executions of `counted[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPlan {
    /// The edge-mode plan this one thins out (its chords are edge mode's counters).
    pub edge_plan: EdgePlan,
    /// The edges that keep a counter, in `EdgeId` order.
    pub counted: Vec<EdgeId>,
    /// The chords whose counters were dropped (their fundamental cycle is pipeless), in `EdgeId` order.
    pub removed: Vec<EdgeId>,
}

impl BlockPlan {
    /// Number of block-mode counters.
    pub fn num_counters(&self) -> usize {
        self.counted.len()
    }

    /// Number of counters edge mode would use on the same graph, weighting and instrumentable edges.
    pub fn edge_mode_counters(&self) -> usize {
        self.edge_plan.chords.len()
    }

    /// Per-edge measured values for [`derive_block_counts`]: `Some(counters[i])` on `counted[i]`, `None`
    /// elsewhere. `counters` shorter than the plan leaves the missing edges `None`.
    pub fn measured(&self, counters: &[u64]) -> Vec<Option<u64>> {
        let mut m = vec![None; self.edge_plan.tree.num_edges()];
        for (&e, &c) in self.counted.iter().zip(counters) {
            m[e.index()] = Some(c);
        }
        m
    }
}

/// Vprof(Ecnt) placement: the edge-mode plan ([`plan_edge_counters_with_entry_counter`], same arguments and
/// errors) minus the counters of chords whose fundamental cycle in its spanning tree is pipeless.
pub fn plan_block_counters(cfg: &Cfg, weights: &[f64], instrumentable: &[bool]) -> Result<BlockPlan, PlacementError> {
    let edge_plan = plan_edge_counters_with_entry_counter(cfg, weights, instrumentable)?;
    let forest = Forest::new(cfg, edge_plan.tree.as_mask());
    let mut scratch = vec![0i64; cfg.num_vertices()];
    let (removed, counted): (Vec<EdgeId>, Vec<EdgeId>) =
        edge_plan.chords.iter().partition(|&&e| forest.pipes(cfg, e, &mut scratch).is_empty());
    Ok(BlockPlan { edge_plan, counted, removed })
}

/// Which counts a set of counted edges fixes: [`determined`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Determined {
    /// Per vertex (EXIT included): its count (in-flow) is the same in every execution with these counter values.
    pub vertices: Vec<bool>,
    /// Per edge: its count is fixed by the counters (measured, or on no cycle of uncounted edges).
    pub edges: Vec<bool>,
}

impl Determined {
    /// Whether every vertex count is derivable (the counted edges solve Vprof(Ecnt)).
    pub fn all_vertices(&self) -> bool {
        self.vertices.iter().all(|&d| d)
    }
}

/// Which vertex and edge counts `counted` (one flag per edge) determines. A vertex is determined iff no
/// fundamental cycle of the uncounted edges has a pipe at it (see the module docs); an edge iff it lies on no
/// such cycle. O(|E| α + #cycles · |V|).
pub fn determined(cfg: &Cfg, counted: &[bool]) -> Determined {
    let (forest_mask, breaks) = split_uncounted(cfg, counted);
    determined_with(cfg, &Forest::new(cfg, &forest_mask), &breaks)
}

fn determined_with(cfg: &Cfg, forest: &Forest, breaks: &[EdgeId]) -> Determined {
    let mut vertices = vec![true; cfg.num_vertices()];
    let mut edges = vec![true; cfg.num_edges()];
    let mut scratch = vec![0i64; cfg.num_vertices()];
    for &b in breaks {
        for (e, _) in forest.cycle(cfg, b) {
            edges[e.index()] = false;
        }
        for v in forest.pipes(cfg, b, &mut scratch) {
            vertices[v.index()] = false;
        }
    }
    Determined { vertices, edges }
}

/// Block-mode counts derived from the counted edges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockCounts {
    /// Per vertex (EXIT included): its count (in-flow, fork re-entries included), or `None` when the counters
    /// do not determine it. Negative only if the input is inconsistent.
    pub vertices: Vec<Option<i128>>,
    /// Per edge: its count when the counters determine it, else `None`.
    pub edges: Vec<Option<i128>>,
    /// Vertices where flow is not conserved (only with inconsistent counters, as in edge mode).
    pub conservation_violations: Vec<BlockId>,
}

/// BL94 Figure 8: derives every determined vertex (and edge) count from `measured` (`Some` on counted edges).
/// One uncounted edge per independent uncounted cycle is set to 0 and the rest propagated as in edge mode
/// ([`derive_counts_with_reentries`], whose `reentries` and errors this shares); counts [`determined`] does not
/// vouch for are `None`, never guessed. `adj` must be `cfg.adjacency()`.
pub fn derive_block_counts(
    cfg: &Cfg,
    adj: &Adjacency,
    measured: &[Option<u64>],
    reentries: &[(BlockId, u64)],
) -> Result<BlockCounts, PropagateError> {
    if measured.len() != cfg.num_edges() {
        return Err(PropagateError::MeasuredCountMismatch { expected: cfg.num_edges(), found: measured.len() });
    }
    let counted: Vec<bool> = measured.iter().map(Option::is_some).collect();
    let (forest_mask, breaks) = split_uncounted(cfg, &counted);
    let mut with_breaks = measured.to_vec();
    for &b in &breaks {
        with_breaks[b.index()] = Some(0);
    }
    let derived = derive_counts_with_reentries(cfg, adj, &with_breaks, reentries)?;
    let known = determined_with(cfg, &Forest::new(cfg, &forest_mask), &breaks);
    let pick = |values: &[i128], known: &[bool]| values.iter().zip(known).map(|(&v, &k)| k.then_some(v)).collect();
    Ok(BlockCounts {
        vertices: pick(&derived.vertices, &known.vertices),
        edges: pick(&derived.edges, &known.edges),
        conservation_violations: derived.conservation_violations,
    })
}

/// Splits the uncounted edges into a spanning forest of them (mask) and the rest (the *breaks*, in `EdgeId`
/// order: each closes one independent cycle, self-loops included).
fn split_uncounted(cfg: &Cfg, counted: &[bool]) -> (Vec<bool>, Vec<EdgeId>) {
    let mut uf = UnionFind::new(cfg.num_vertices());
    let mut mask = vec![false; cfg.num_edges()];
    let mut breaks = Vec::new();
    for e in cfg.edge_ids() {
        if counted.get(e.index()).copied().unwrap_or(false) {
            continue;
        }
        let edge = cfg.edge(e);
        if uf.union(edge.from.index(), edge.to.index()) {
            mask[e.index()] = true;
        } else {
            breaks.push(e);
        }
    }
    (mask, breaks)
}

/// A rooted spanning forest, for walking fundamental cycles.
struct Forest {
    /// Per vertex: the tree edge to its parent and the parent (`None` at a root).
    parent: Vec<Option<(EdgeId, BlockId)>>,
    depth: Vec<usize>,
}

impl Forest {
    /// Roots every tree of the forest `in_forest` (one flag per edge) at its lowest vertex.
    fn new(cfg: &Cfg, in_forest: &[bool]) -> Forest {
        let n = cfg.num_vertices();
        let mut nbrs: Vec<Vec<(EdgeId, BlockId)>> = vec![Vec::new(); n];
        for e in cfg.edge_ids().filter(|e| in_forest[e.index()]) {
            let edge = cfg.edge(e);
            nbrs[edge.from.index()].push((e, edge.to));
            nbrs[edge.to.index()].push((e, edge.from));
        }
        let mut parent = vec![None; n];
        let mut depth = vec![0usize; n];
        let mut seen = vec![false; n];
        for root in 0..n {
            if seen[root] {
                continue;
            }
            seen[root] = true;
            let mut stack = vec![root];
            while let Some(v) = stack.pop() {
                for &(e, w) in &nbrs[v] {
                    if !seen[w.index()] {
                        seen[w.index()] = true;
                        parent[w.index()] = Some((e, BlockId::from_index(v)));
                        depth[w.index()] = depth[v] + 1;
                        stack.push(w.index());
                    }
                }
            }
        }
        Forest { parent, depth }
    }

    /// The fundamental cycle of non-forest edge `chord` (whose endpoints must be in one tree): `chord` traversed
    /// forward, then the forest path from its target back to its source; each edge with `true` when traversed
    /// in its own direction.
    fn cycle(&self, cfg: &Cfg, chord: EdgeId) -> Vec<(EdgeId, bool)> {
        let edge = cfg.edge(chord);
        let mut cycle = vec![(chord, true)];
        // Climb from both ends to their lowest common ancestor.
        let (mut a, mut b) = (edge.to, edge.from);
        let mut down = Vec::new(); // edges from the LCA down to `edge.from`, bottom first
        while a != b {
            if self.depth[a.index()] >= self.depth[b.index()] {
                let Some((e, p)) = self.parent[a.index()] else { break };
                cycle.push((e, cfg.edge(e).from == a)); // walking a -> p
                a = p;
            } else {
                let Some((e, p)) = self.parent[b.index()] else { break };
                down.push((e, cfg.edge(e).from == p)); // walking p -> b
                b = p;
            }
        }
        cycle.extend(down.into_iter().rev());
        cycle
    }

    /// The pipes of `chord`'s fundamental cycle: the vertices whose in-flow a unit circulation around it changes.
    /// `scratch` is all zeros, one entry per vertex, and is left so.
    fn pipes(&self, cfg: &Cfg, chord: EdgeId, scratch: &mut [i64]) -> Vec<BlockId> {
        let cycle = self.cycle(cfg, chord);
        for &(e, forward) in &cycle {
            scratch[cfg.edge(e).to.index()] += if forward { 1 } else { -1 };
        }
        let mut pipes = Vec::new();
        for &(e, _) in &cycle {
            let v = cfg.edge(e).to;
            if scratch[v.index()] != 0 {
                pipes.push(v);
            }
            scratch[v.index()] = 0;
        }
        pipes
    }
}

#[cfg(test)]
mod tests;
