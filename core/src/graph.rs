//! The control-flow multigraph every pathprof algorithm works on.
//!
//! Invariant: blocks are `0..num_blocks`, the virtual EXIT is `BlockId(num_blocks)`, the entry is block 0, and
//! edges are identified by `EdgeId` only — parallel edges (a `switch` with two cases to one block) are distinct
//! edges and are never merged by `(from, to)`.
//!
//! The graph is the one of Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §2:
//! every real exit (return, resume, unreachable) feeds EXIT, and one `ExitToEntry` edge EXIT→entry makes the graph
//! strongly connected for the spanning-tree algorithms. pathprof adds `Termination` edges (block→EXIT) for blocks
//! whose calls may leave the frame abnormally (`exit()`, `longjmp`, an exception through a plain call); they are
//! never instrumented, always in the spanning tree, and their derived count is the number of abnormal departures
//! from that block (BL94 §3.2's early-exit edges, measured through chords instead of handlers).

use serde::{Deserialize, Serialize};

/// Defines a `u32` newtype index with `index`/`from_index`, serde, and `Debug`/`Display` as `<prefix><n>`
/// (Cranelift's `entity_impl!` idea): every entity kind in pathprof-core gets its own id type.
macro_rules! typed_index {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`, for indexing per-entity vectors.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
            /// Builds the id from a vector index; panics only on a pathprof bug (more than u32::MAX entities).
            #[inline]
            pub fn from_index(i: usize) -> Self {
                $name(u32::try_from(i).expect("entity index exceeds u32"))
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}
pub(crate) use typed_index;

typed_index!(
    /// A vertex of a [`Cfg`]: a basic block, or the virtual EXIT (`Cfg::exit()`).
    BlockId,
    "bb"
);
typed_index!(
    /// An edge of a [`Cfg`]; parallel edges have distinct ids.
    EdgeId,
    "e"
);

/// What an edge stands for; decides whether it can carry a counter and how it is decoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EdgeKind {
    /// Successor number `succ` of the source block's terminator (terminator order is the recorded order).
    Branch {
        /// Index of the successor operand in the terminator (LLVM successor index).
        succ: u32,
    },
    /// A `ret` or `resume` leaving the function normally (source → EXIT); can carry a counter in its source.
    Return,
    /// Virtual source → EXIT edge for a block that may be left abnormally (a call that may not return, or an
    /// `unreachable` terminator). Never instrumented; forced into the spanning tree.
    Termination,
    /// The virtual EXIT → entry edge of BL94; its derived count is the number of invocations.
    ExitToEntry,
}

impl EdgeKind {
    /// Virtual edges have no code to put a counter in; placement forces them into the spanning tree.
    pub fn is_virtual(self) -> bool {
        matches!(self, EdgeKind::Termination | EdgeKind::ExitToEntry)
    }
}

/// One directed edge.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Edge {
    /// Source vertex.
    pub from: BlockId,
    /// Target vertex.
    pub to: BlockId,
    /// What the edge stands for.
    pub kind: EdgeKind,
}

/// A function's control-flow multigraph with virtual EXIT; see the module docs for the invariants.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cfg {
    num_blocks: u32,
    edges: Vec<Edge>,
}

/// Why a graph handed to [`Cfg::new`] is not a well-formed pathprof CFG.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CfgError {
    /// A function has at least one block.
    #[error("a function must have at least one block")]
    NoBlocks,
    /// An edge names a vertex outside `0..=num_blocks`.
    #[error("edge {edge} refers to vertex {vertex} but the graph has {num_blocks} blocks")]
    VertexOutOfRange {
        /// The offending edge.
        edge: EdgeId,
        /// The vertex named.
        vertex: u32,
        /// Real blocks in the graph.
        num_blocks: u32,
    },
    /// Kinds and endpoints disagree (e.g. a `Return` edge not ending at EXIT).
    #[error("edge {edge} of kind {kind:?} has the wrong endpoints")]
    BadEndpoints {
        /// The offending edge.
        edge: EdgeId,
        /// Its kind.
        kind: EdgeKind,
    },
    /// Exactly one EXIT→entry edge is required.
    #[error("expected exactly one EXIT->entry edge, found {0}")]
    ExitToEntryCount(usize),
    /// Too many edges for 32-bit edge ids.
    #[error("too many edges ({0})")]
    TooManyEdges(usize),
}

impl Cfg {
    /// Builds and validates a CFG. `num_blocks` counts real blocks; EXIT is vertex `num_blocks`, entry is 0.
    /// Validation makes every later algorithm total on graphs read from untrusted profiles.
    pub fn new(num_blocks: u32, edges: Vec<Edge>) -> Result<Cfg, CfgError> {
        if num_blocks == 0 {
            return Err(CfgError::NoBlocks);
        }
        if u32::try_from(edges.len()).is_err() {
            return Err(CfgError::TooManyEdges(edges.len()));
        }
        let exit = num_blocks;
        let mut exit_to_entry = 0usize;
        for (i, e) in edges.iter().enumerate() {
            let id = EdgeId::from_index(i);
            for v in [e.from.0, e.to.0] {
                if v > exit {
                    return Err(CfgError::VertexOutOfRange { edge: id, vertex: v, num_blocks });
                }
            }
            let ok = match e.kind {
                EdgeKind::Branch { .. } => e.from.0 != exit && e.to.0 != exit,
                EdgeKind::Return | EdgeKind::Termination => e.from.0 != exit && e.to.0 == exit,
                EdgeKind::ExitToEntry => {
                    exit_to_entry += 1;
                    e.from.0 == exit && e.to.0 == 0
                }
            };
            if !ok {
                return Err(CfgError::BadEndpoints { edge: id, kind: e.kind });
            }
        }
        if exit_to_entry != 1 {
            return Err(CfgError::ExitToEntryCount(exit_to_entry));
        }
        Ok(Cfg { num_blocks, edges })
    }

    /// Number of real blocks (EXIT excluded).
    pub fn num_blocks(&self) -> usize {
        self.num_blocks as usize
    }

    /// Number of vertices, EXIT included.
    pub fn num_vertices(&self) -> usize {
        self.num_blocks as usize + 1
    }

    /// Number of edges, virtual ones included.
    pub fn num_edges(&self) -> usize {
        self.edges.len()
    }

    /// The function's entry block.
    pub fn entry(&self) -> BlockId {
        BlockId(0)
    }

    /// The virtual EXIT vertex.
    pub fn exit(&self) -> BlockId {
        BlockId(self.num_blocks)
    }

    /// One edge.
    pub fn edge(&self, e: EdgeId) -> &Edge {
        &self.edges[e.index()]
    }

    /// All edges in `EdgeId` order.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Edge ids in order.
    pub fn edge_ids(&self) -> impl Iterator<Item = EdgeId> + '_ {
        (0..self.edges.len()).map(EdgeId::from_index)
    }

    /// All vertices, EXIT last.
    pub fn vertices(&self) -> impl Iterator<Item = BlockId> {
        (0..=self.num_blocks).map(BlockId)
    }

    /// The EXIT→entry edge.
    pub fn exit_to_entry(&self) -> EdgeId {
        self.edge_ids().find(|&e| self.edge(e).kind == EdgeKind::ExitToEntry).expect("validated by Cfg::new")
    }

    /// Successor and predecessor lists, in `EdgeId` order (so terminator order for `Branch` edges).
    pub fn adjacency(&self) -> Adjacency {
        let n = self.num_vertices();
        let mut out: Vec<Vec<EdgeId>> = vec![Vec::new(); n];
        let mut inc: Vec<Vec<EdgeId>> = vec![Vec::new(); n];
        for (i, e) in self.edges.iter().enumerate() {
            out[e.from.index()].push(EdgeId::from_index(i));
            inc[e.to.index()].push(EdgeId::from_index(i));
        }
        Adjacency { out, inc }
    }
}

/// Per-vertex outgoing and incoming edge lists of a [`Cfg`], computed once and shared by the algorithms.
#[derive(Clone, Debug)]
pub struct Adjacency {
    out: Vec<Vec<EdgeId>>,
    inc: Vec<Vec<EdgeId>>,
}

impl Adjacency {
    /// Outgoing edges of `v` in `EdgeId` order.
    pub fn out_edges(&self, v: BlockId) -> &[EdgeId] {
        &self.out[v.index()]
    }
    /// Incoming edges of `v` in `EdgeId` order.
    pub fn in_edges(&self, v: BlockId) -> &[EdgeId] {
        &self.inc[v.index()]
    }
}

/// Builds CFGs in tests and property tests: `edges` are `(from, to)` pairs between real blocks (`Branch` edges,
/// successor index = position among the source's pairs); `exits` lists blocks that return. EXIT→entry is added.
pub fn test_cfg(num_blocks: u32, edges: &[(u32, u32)], exits: &[u32]) -> Cfg {
    let mut succ_count = vec![0u32; num_blocks as usize];
    let mut all = Vec::new();
    for &(f, t) in edges {
        let succ = succ_count[f as usize];
        succ_count[f as usize] += 1;
        all.push(Edge { from: BlockId(f), to: BlockId(t), kind: EdgeKind::Branch { succ } });
    }
    for &x in exits {
        all.push(Edge { from: BlockId(x), to: BlockId(num_blocks), kind: EdgeKind::Return });
    }
    all.push(Edge { from: BlockId(num_blocks), to: BlockId(0), kind: EdgeKind::ExitToEntry });
    Cfg::new(num_blocks, all).expect("test_cfg: malformed test graph")
}

/// How an edge of [`ordered_cfg`] leaves its block.
#[derive(Copy, Clone, Debug)]
pub enum Leave {
    /// A branch; its successor index is its position among the block's branches.
    B,
    /// A return (to EXIT).
    R,
    /// A termination: a call that may not return (to EXIT).
    T,
}

/// Builds CFGs in tests whose edge order is part of the oracle (edge ids, which the hand-derived counts name):
/// `(from, to, how)` in id order, EXIT→entry added last. Returns and terminations go to EXIT (`num_blocks`).
pub fn ordered_cfg(num_blocks: u32, edges: &[(u32, u32, Leave)]) -> Cfg {
    let mut succ_count = vec![0u32; num_blocks as usize];
    let mut all = Vec::new();
    for &(f, t, how) in edges {
        let kind = match how {
            Leave::B => {
                let succ = succ_count[f as usize];
                succ_count[f as usize] += 1;
                EdgeKind::Branch { succ }
            }
            Leave::R => EdgeKind::Return,
            Leave::T => EdgeKind::Termination,
        };
        all.push(Edge { from: BlockId(f), to: BlockId(t), kind });
    }
    all.push(Edge { from: BlockId(num_blocks), to: BlockId(0), kind: EdgeKind::ExitToEntry });
    Cfg::new(num_blocks, all).expect("ordered_cfg: malformed test graph")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_out_of_range_vertices() {
        let e = vec![
            Edge { from: BlockId(0), to: BlockId(5), kind: EdgeKind::Branch { succ: 0 } },
            Edge { from: BlockId(1), to: BlockId(0), kind: EdgeKind::ExitToEntry },
        ];
        assert!(matches!(Cfg::new(1, e), Err(CfgError::VertexOutOfRange { .. })));
    }

    #[test]
    fn parallel_edges_stay_distinct() {
        let g = test_cfg(2, &[(0, 1), (0, 1)], &[1]);
        let adj = g.adjacency();
        assert_eq!(adj.out_edges(BlockId(0)).len(), 2);
        assert_eq!(adj.in_edges(BlockId(1)).len(), 2);
        assert_eq!(g.num_edges(), 4);
    }
}
