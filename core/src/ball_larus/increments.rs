//! Chord increments: moving the path-number additions off a maximum spanning tree (event counting).
//!
//! Ball & Larus, "Efficient Path Profiling", MICRO-29, 1996, §3.3–3.4, using Ball's event counting (T. Ball,
//! "The Use of Control-Flow and Control Dependence in Software Tools", PhD thesis, UW–Madison, 1993, ch. 4):
//! given Val on the DAG edges, pick a spanning tree T containing EXIT→ENTRY (a maximum one for the expected
//! edge frequencies, so hot edges carry no code) and give every chord c the increment Inc(c) = Σ ±Val round
//! the fundamental cycle of c in T ∪ {c}.
//!
//! Invariant: for every ENTRY→EXIT path p of the DAG, Σ_{e∈p} Inc(e) = Σ_{e∈p} Val(e) = p's path number, and
//! Inc(e) = 0 on tree edges. Computed with potentials: φ is fixed on each tree component by
//! φ(to) − φ(from) = Val(e) for tree edges, and Inc(e) = Val(e) + φ(from) − φ(to) for all edges. Along a path
//! the φ terms telescope to φ(ENTRY) − φ(EXIT), which is 0 because EXIT→ENTRY (Val 0) is a tree edge; this
//! holds for *any* acyclic tree edge set containing EXIT→ENTRY, which the property tests exercise. O(V + E)
//! after the O(E log E) tree; checked `i128` arithmetic.

use super::dag::{DagEdgeId, PathDag};
use super::numbering::Numbering;
use crate::spanning::{max_spanning_tree_of, SpanningError};

/// Why increments could not be computed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IncrementError {
    /// `weights` (or a tree mask) does not have one entry per DAG edge.
    #[error("{found} entries given for {expected} DAG edges")]
    LengthMismatch {
        /// Number of DAG edges.
        expected: usize,
        /// Entries given.
        found: usize,
    },
    /// The numbering belongs to another DAG.
    #[error("the numbering does not belong to this DAG")]
    NumberingMismatch,
    /// A forced edge id is not an edge of the DAG.
    #[error("forced edge {0} is not a DAG edge")]
    ForcedOutOfRange(DagEdgeId),
    /// The forced edges (EXIT→ENTRY first, then the caller's) close an undirected cycle; `edge` is the first
    /// one that does.
    #[error("forced edge {edge} closes a cycle with the other forced tree edges")]
    ForcedCycle {
        /// The offending forced edge.
        edge: DagEdgeId,
    },
    /// The spanning-tree construction rejected its input (e.g. a NaN weight).
    #[error("spanning tree: {0}")]
    Spanning(SpanningError),
    /// A tree mask handed to [`Increments::from_tree`] has a cycle through `edge`.
    #[error("the tree edges contain a cycle through {edge}")]
    TreeCycle {
        /// A tree edge that closes a cycle.
        edge: DagEdgeId,
    },
    /// A tree mask handed to [`Increments::from_tree`] leaves EXIT→ENTRY out; the increments would be off by
    /// Inc(EXIT→ENTRY) on every path (notes C.3).
    #[error("the tree must contain the EXIT->ENTRY edge")]
    ExitToEntryNotInTree,
    /// A potential or increment does not fit in an `i128` (only for path counts near 2^127).
    #[error("chord increment overflows 128 bits")]
    Overflow,
}

/// The increment of every DAG edge and the tree/chord split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Increments {
    /// Inc(e) per DAG edge; 0 on tree edges.
    inc: Vec<i128>,
    /// Whether each DAG edge is a tree edge (the others are chords).
    in_tree: Vec<bool>,
}

impl Increments {
    /// Maximum spanning tree for `weights` (one per DAG edge, e.g. expected frequencies) with EXIT→ENTRY and
    /// then `forced` (edges the pass cannot instrument) forced into it, then the chord increments. Ties in
    /// weight go to the lower [`DagEdgeId`], so the result is deterministic.
    pub fn compute(
        dag: &PathDag,
        numbering: &Numbering,
        weights: &[f64],
        forced: &[DagEdgeId],
    ) -> Result<Increments, IncrementError> {
        let m = dag.num_edges();
        if weights.len() != m {
            return Err(IncrementError::LengthMismatch { expected: m, found: weights.len() });
        }
        let mut forced_idx = Vec::with_capacity(forced.len() + 1);
        forced_idx.push(dag.exit_to_entry().index());
        for &f in forced {
            if f.index() >= m {
                return Err(IncrementError::ForcedOutOfRange(f));
            }
            forced_idx.push(f.index());
        }
        let in_tree = max_spanning_tree_of(dag.num_vertices(), &dag.endpoint_pairs(), weights, &forced_idx).map_err(
            |e| match e {
                SpanningError::ForcedCycle { edge } => IncrementError::ForcedCycle { edge: DagEdgeId(edge.0) },
                other => IncrementError::Spanning(other),
            },
        )?;
        Increments::from_tree(dag, numbering, in_tree)
    }

    /// Increments for a given tree edge set (`in_tree[e]`), which must be acyclic and contain EXIT→ENTRY; it
    /// need not be maximal (edges between tree components just become chords).
    pub fn from_tree(dag: &PathDag, numbering: &Numbering, in_tree: Vec<bool>) -> Result<Increments, IncrementError> {
        let m = dag.num_edges();
        let nv = dag.num_vertices();
        if in_tree.len() != m {
            return Err(IncrementError::LengthMismatch { expected: m, found: in_tree.len() });
        }
        if numbering.vals().len() != m || numbering.num_paths_per_vertex().len() != nv {
            return Err(IncrementError::NumberingMismatch);
        }
        if !in_tree[dag.exit_to_entry().index()] {
            return Err(IncrementError::ExitToEntryNotInTree);
        }
        let val = |e: DagEdgeId| i128::try_from(numbering.val(e)).map_err(|_| IncrementError::Overflow);

        // Tree adjacency (undirected), then potentials by an explicit-stack traversal per component.
        let mut tree_adj: Vec<Vec<DagEdgeId>> = vec![Vec::new(); nv];
        for e in dag.edge_ids().filter(|e| in_tree[e.index()]) {
            let d = dag.edge(e);
            if d.from == d.to {
                return Err(IncrementError::TreeCycle { edge: e });
            }
            tree_adj[d.from.index()].push(e);
            tree_adj[d.to.index()].push(e);
        }
        let mut phi: Vec<Option<i128>> = vec![None; nv];
        let mut used = vec![false; m];
        let mut stack = Vec::new();
        // ENTRY's component first (φ(ENTRY) = 0), then the rest in vertex order.
        for root in std::iter::once(0).chain(0..nv) {
            if phi[root].is_some() {
                continue;
            }
            phi[root] = Some(0);
            stack.push(root);
            while let Some(u) = stack.pop() {
                let pu = phi[u].ok_or(IncrementError::Overflow)?;
                for &e in &tree_adj[u] {
                    if used[e.index()] {
                        continue;
                    }
                    used[e.index()] = true;
                    let d = dag.edge(e);
                    let v = val(e)?;
                    let (w, pw) = if d.from.index() == u {
                        (d.to.index(), pu.checked_add(v))
                    } else {
                        (d.from.index(), pu.checked_sub(v))
                    };
                    let pw = pw.ok_or(IncrementError::Overflow)?;
                    if phi[w].is_some() {
                        return Err(IncrementError::TreeCycle { edge: e });
                    }
                    phi[w] = Some(pw);
                    stack.push(w);
                }
            }
        }

        let mut inc = vec![0i128; m];
        for e in dag.edge_ids() {
            if in_tree[e.index()] {
                continue;
            }
            let d = dag.edge(e);
            let (pf, pt) = (phi[d.from.index()].unwrap_or(0), phi[d.to.index()].unwrap_or(0));
            inc[e.index()] = val(e)?.checked_add(pf).and_then(|x| x.checked_sub(pt)).ok_or(IncrementError::Overflow)?;
        }
        Ok(Increments { inc, in_tree })
    }

    /// Inc(e): what the chord adds to the path register (0 for tree edges and ids out of range).
    pub fn inc(&self, e: DagEdgeId) -> i128 {
        self.inc.get(e.index()).copied().unwrap_or(0)
    }

    /// Inc for every DAG edge, indexed by `DagEdgeId::index`.
    pub fn increments(&self) -> &[i128] {
        &self.inc
    }

    /// Whether `e` is a chord (not in the spanning tree). Chords are where the pass may put code; a chord with
    /// Inc 0 needs none (unless it ends or starts a path).
    pub fn is_chord(&self, e: DagEdgeId) -> bool {
        self.in_tree.get(e.index()).is_some_and(|&t| !t)
    }

    /// Whether `e` is a spanning-tree edge (Inc 0, no code).
    pub fn in_tree(&self, e: DagEdgeId) -> bool {
        self.in_tree.get(e.index()).copied().unwrap_or(false)
    }

    /// The chords in `DagEdgeId` order.
    pub fn chords(&self) -> impl Iterator<Item = DagEdgeId> + '_ {
        self.in_tree.iter().enumerate().filter(|(_, &t)| !t).map(|(i, _)| DagEdgeId::from_index(i))
    }

    /// The tree membership mask, indexed by `DagEdgeId::index`.
    pub fn tree_mask(&self) -> &[bool] {
        &self.in_tree
    }
}
