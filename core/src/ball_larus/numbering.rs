//! Ball–Larus path numbering: NumPaths per vertex and Val per DAG edge.
//!
//! Ball & Larus, "Efficient Path Profiling", MICRO-29, 1996, §3.1 (Figure 5): visiting the DAG in reverse
//! topological order, NumPaths(EXIT) = 1 and, for every other vertex v, each out-edge v→w in the recorded
//! successor order gets Val(v→w) = the running NumPaths(v) before NumPaths(w) is added to it.
//!
//! Invariant: summing Val along the ENTRY→EXIT paths of the DAG is a bijection onto `0..NumPaths(ENTRY)`
//! (the numbering is *dense* and *precise*), and among the out-edges of any vertex that lead to EXIT at all,
//! Val is strictly increasing in the recorded order, which is what makes greedy regeneration correct. All
//! arithmetic is `u128` and checked: overflow is [`NumberingError::TooManyPaths`], never a wrap.
//!
//! ENTRY self-loops (surrogates of back edges into block 0, see `dag.rs`) are the one extension: with P the
//! number of paths from ENTRY not starting with a self-loop, the k-th self-loop (they come last in ENTRY's
//! order) gets Val = k·P and contributes P paths — "re-enter block 0, then any ordinary path".

use super::dag::{DagEdgeId, DagEdgeKind, PathDag};
use crate::graph::BlockId;

/// Why a DAG could not be numbered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NumberingError {
    /// NumPaths of `vertex` does not fit in a `u128`; build the DAG with a path budget instead.
    #[error("the number of paths from {vertex} overflows 128 bits")]
    TooManyPaths {
        /// The first vertex (in reverse topological order) whose path count overflowed.
        vertex: BlockId,
    },
    /// The DAG's recorded topological or successor order is violated at `vertex` (a pathprof bug, or a DAG
    /// built with a `DfsInfo` of another graph).
    #[error("the path DAG is not acyclic in its recorded order at {vertex}")]
    NotADag {
        /// Where the violation was found.
        vertex: BlockId,
    },
}

/// NumPaths and Val for one [`PathDag`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Numbering {
    /// NumPaths(v): the number of v→EXIT paths, per vertex (0 for vertices outside the DAG).
    num_paths: Vec<u128>,
    /// Val(e) per DAG edge (0 for the EXIT→ENTRY edge).
    val: Vec<u128>,
}

impl Numbering {
    /// Computes NumPaths and Val in reverse topological order, successors in the DAG's recorded order.
    pub fn compute(dag: &PathDag) -> Result<Numbering, NumberingError> {
        let nv = dag.num_vertices();
        let entry = dag.entry();
        let exit = dag.exit();
        let mut num_paths = vec![0u128; nv];
        let mut val = vec![0u128; dag.num_edges()];
        let mut done = vec![false; nv];
        for &v in dag.topological_order().iter().rev() {
            let vi = v.index();
            if v == exit {
                num_paths[vi] = 1;
                done[vi] = true;
                continue;
            }
            let outs = dag.out_edges(v);
            // P: paths not starting with a self-loop. Self-loops (ENTRY only) must come last.
            let mut plain = 0u128;
            let mut seen_self_loop = false;
            for &d in outs {
                let w = dag.edge(d).to;
                if w == v {
                    if v != entry {
                        return Err(NumberingError::NotADag { vertex: v });
                    }
                    seen_self_loop = true;
                    continue;
                }
                if seen_self_loop || !done[w.index()] {
                    return Err(NumberingError::NotADag { vertex: v });
                }
                plain = plain.checked_add(num_paths[w.index()]).ok_or(NumberingError::TooManyPaths { vertex: v })?;
            }
            let mut running = 0u128;
            for &d in outs {
                val[d.index()] = running;
                let w = dag.edge(d).to;
                let add = if w == v { plain } else { num_paths[w.index()] };
                running = running.checked_add(add).ok_or(NumberingError::TooManyPaths { vertex: v })?;
            }
            num_paths[vi] = running;
            done[vi] = true;
        }
        debug_assert!(dag.edge(dag.exit_to_entry()).kind == DagEdgeKind::ExitToEntry);
        Ok(Numbering { num_paths, val })
    }

    /// NumPaths(ENTRY): the number of distinct path numbers, `0..num_paths()`.
    pub fn num_paths(&self) -> u128 {
        self.num_paths.first().copied().unwrap_or(0)
    }

    /// NumPaths(v): the number of v→EXIT paths (0 for vertices outside the DAG or out of range).
    pub fn num_paths_from(&self, v: BlockId) -> u128 {
        self.num_paths.get(v.index()).copied().unwrap_or(0)
    }

    /// Val(e), the BL96 edge value (0 for ids out of range).
    pub fn val(&self, e: DagEdgeId) -> u128 {
        self.val.get(e.index()).copied().unwrap_or(0)
    }

    /// NumPaths for every vertex, indexed by `BlockId::index`.
    pub fn num_paths_per_vertex(&self) -> &[u128] {
        &self.num_paths
    }

    /// Val for every DAG edge, indexed by `DagEdgeId::index`.
    pub fn vals(&self) -> &[u128] {
        &self.val
    }
}
