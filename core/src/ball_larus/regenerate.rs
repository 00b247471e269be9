//! Path regeneration: path number → DAG path → cfg blocks and edges.
//!
//! Ball & Larus, "Efficient Path Profiling", MICRO-29, 1996, §3.5 ("Regenerating a path"): start at ENTRY with
//! R = r; at each vertex take the out-edge with the largest Val ≤ R (among those that lead to EXIT at all, i.e.
//! whose target has NumPaths > 0), set R ← R − Val, until EXIT. [`encode`] is the inverse: the sum of Val.
//!
//! Invariant: for a numbering of this DAG, `decode` and `encode` are mutually inverse bijections between
//! `0..NumPaths(ENTRY)` and the DAG's ENTRY→EXIT paths; every input (path numbers and edge ids come from
//! untrusted profile files) is validated and failures are errors, never panics or unbounded loops.

use super::dag::{DagEdgeId, DagEdgeKind, PathDag};
use super::numbering::Numbering;
use crate::graph::{BlockId, EdgeId};

/// Why a path number or a DAG path could not be regenerated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The path number is not below NumPaths(ENTRY).
    #[error("path number {r} out of range (the function has {num_paths} paths)")]
    OutOfRange {
        /// The path number given.
        r: u128,
        /// NumPaths(ENTRY).
        num_paths: u128,
    },
    /// The greedy walk found no admissible edge (only with a numbering that does not match the DAG).
    #[error("regeneration got stuck at {vertex} with remainder {remainder}")]
    WalkFailed {
        /// Where the walk stopped.
        vertex: BlockId,
        /// The remaining R.
        remainder: u128,
    },
    /// The numbering does not belong to this DAG (or the DAG not to this cfg).
    #[error("the numbering or CFG does not belong to this DAG")]
    Mismatch,
    /// A DAG edge sequence is not an ENTRY→EXIT path; `position` is the first bad entry.
    #[error("not an ENTRY->EXIT path of the DAG at position {position}")]
    InvalidPath {
        /// Index into the given sequence (the length, for an empty path or one that stops short of EXIT).
        position: usize,
    },
    /// A path number or count sum does not fit in a `u128`.
    #[error("count overflows 128 bits")]
    Overflow,
    /// A fork re-entry names a path that does not end with a `Termination` edge (only truncated paths are
    /// in flight at a fork).
    #[error("fork re-entry of path {r}, which is not cut short by a call")]
    NotTruncated {
        /// The path number given.
        r: u128,
    },
}

fn check_numbering(dag: &PathDag, numbering: &Numbering) -> Result<(), DecodeError> {
    if numbering.vals().len() != dag.num_edges() || numbering.num_paths_per_vertex().len() != dag.num_vertices() {
        return Err(DecodeError::Mismatch);
    }
    Ok(())
}

/// Regenerates the DAG path with number `r` (greedy "largest Val ≤ R" walk from ENTRY).
pub fn decode(dag: &PathDag, numbering: &Numbering, r: u128) -> Result<Vec<DagEdgeId>, DecodeError> {
    check_numbering(dag, numbering)?;
    let num_paths = numbering.num_paths();
    if r >= num_paths {
        return Err(DecodeError::OutOfRange { r, num_paths });
    }
    let exit = dag.exit();
    let mut v = dag.entry();
    let mut rem = r;
    let mut path = Vec::new();
    // A path visits each vertex at most once, plus one leading ENTRY self-loop.
    for _ in 0..=dag.num_vertices() + 1 {
        if v == exit {
            return if rem == 0 { Ok(path) } else { Err(DecodeError::WalkFailed { vertex: v, remainder: rem }) };
        }
        let mut best: Option<(DagEdgeId, u128)> = None;
        for &d in dag.out_edges(v) {
            let val = numbering.val(d);
            if val <= rem && numbering.num_paths_from(dag.edge(d).to) > 0 && !matches!(best, Some((_, b)) if b >= val) {
                best = Some((d, val));
            }
        }
        let Some((d, val)) = best else {
            return Err(DecodeError::WalkFailed { vertex: v, remainder: rem });
        };
        rem -= val;
        path.push(d);
        v = dag.edge(d).to;
    }
    Err(DecodeError::WalkFailed { vertex: v, remainder: rem })
}

/// Checks that `path` is an ENTRY→EXIT path of `dag` (an ENTRY self-loop is allowed only as the first edge).
pub fn check_path(dag: &PathDag, path: &[DagEdgeId]) -> Result<(), DecodeError> {
    let mut at = dag.entry();
    for (i, &d) in path.iter().enumerate() {
        let e = dag.get_edge(d).ok_or(DecodeError::InvalidPath { position: i })?;
        let ok = e.kind != DagEdgeKind::ExitToEntry && e.from == at && (e.from != e.to || i == 0);
        if !ok {
            return Err(DecodeError::InvalidPath { position: i });
        }
        at = e.to;
    }
    if path.is_empty() || at != dag.exit() {
        return Err(DecodeError::InvalidPath { position: path.len() });
    }
    Ok(())
}

/// The path number of a DAG path: Σ Val along it (after [`check_path`]).
pub fn encode(dag: &PathDag, numbering: &Numbering, path: &[DagEdgeId]) -> Result<u128, DecodeError> {
    check_numbering(dag, numbering)?;
    check_path(dag, path)?;
    path.iter().try_fold(0u128, |acc, &d| acc.checked_add(numbering.val(d)).ok_or(DecodeError::Overflow))
}

/// How a path begins.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathStart {
    /// At the function's entry block, on invocation (first edge is a real edge, or the exit surrogate of a
    /// back edge leaving the entry block).
    Entry,
    /// At the header of back edge `back`, right after it was taken (first edge [`DagEdgeKind::EntrySurrogate`]).
    LoopHeader {
        /// The back edge taken just before this path.
        back: EdgeId,
    },
    /// At the target of cut edge `edge`, right after it was taken (first edge [`DagEdgeKind::SplitEntry`]).
    AfterCut {
        /// The cut edge taken just before this path.
        edge: EdgeId,
    },
}

/// How a path ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathEnd {
    /// By leaving the function through a `Return` or `Termination` edge (a real edge into EXIT).
    Exit {
        /// That edge.
        edge: EdgeId,
    },
    /// By taking back edge `back` (last edge [`DagEdgeKind::ExitSurrogate`]); the next path starts at its header.
    BackEdge {
        /// The back edge.
        back: EdgeId,
    },
    /// By taking cut edge `edge` (last edge [`DagEdgeKind::SplitExit`]).
    Cut {
        /// The cut edge.
        edge: EdgeId,
    },
}

/// A DAG path mapped back to the cfg.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfgPath {
    /// How the path begins.
    pub start: PathStart,
    /// How the path ends.
    pub end: PathEnd,
    /// The blocks visited in order: from the entry block (or the loop header / cut target it starts at) to
    /// the last block before EXIT.
    pub blocks: Vec<BlockId>,
    /// The cfg edges traversed *within* the path: its real edges, the final `Return`/`Termination` included.
    /// A back or cut edge at either end is not listed: it is traversed *between* this path and the next.
    pub edges: Vec<EdgeId>,
}

impl CfgPath {
    /// Whether the path starts at a loop header after a back edge, or after a cut (which behaves the same):
    /// its first DAG edge is an EntrySurrogate or SplitEntry.
    pub fn starts_at_loop_header(&self) -> bool {
        !matches!(self.start, PathStart::Entry)
    }

    /// Whether the path ends by taking a back edge, or a cut edge: its last DAG edge is an ExitSurrogate or
    /// SplitExit.
    pub fn ends_at_back_edge(&self) -> bool {
        !matches!(self.end, PathEnd::Exit { .. })
    }
}

/// Maps a DAG path (e.g. from [`decode`]) to cfg blocks and edges.
pub fn to_cfg_path(dag: &PathDag, path: &[DagEdgeId]) -> Result<CfgPath, DecodeError> {
    check_path(dag, path)?;
    let exit = dag.exit();
    let (first, last) = match (path.first(), path.last()) {
        (Some(&f), Some(&l)) => (dag.edge(f), dag.edge(l)),
        _ => return Err(DecodeError::InvalidPath { position: 0 }),
    };
    let start = match first.kind {
        DagEdgeKind::EntrySurrogate { back } => PathStart::LoopHeader { back },
        DagEdgeKind::SplitEntry { edge } => PathStart::AfterCut { edge },
        _ => PathStart::Entry,
    };
    let end = match last.kind {
        DagEdgeKind::ExitSurrogate { back } => PathEnd::BackEdge { back },
        DagEdgeKind::SplitExit { edge } => PathEnd::Cut { edge },
        DagEdgeKind::Real(edge) => PathEnd::Exit { edge },
        _ => return Err(DecodeError::InvalidPath { position: path.len() - 1 }),
    };
    let mut blocks = Vec::with_capacity(path.len());
    if start == PathStart::Entry {
        blocks.push(dag.entry());
    }
    let mut edges = Vec::with_capacity(path.len());
    for &d in path {
        let e = dag.edge(d);
        if e.to != exit {
            blocks.push(e.to);
        }
        if let DagEdgeKind::Real(ce) = e.kind {
            edges.push(ce);
        }
    }
    Ok(CfgPath { start, end, blocks, edges })
}
