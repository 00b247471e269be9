//! The part of a [`Cfg`] that tracing walks, and the vertices a callee's trace can interleave with.
//!
//! Ball & Larus, TOPLAS 16(3), 1994, §4.1: for tracing, EXIT → root is *not* in the CFG, and a *predicate* is a
//! vertex with several successors. pathprof traces the edges a terminator can take — `Branch` and `Return` —
//! and leaves out the virtual `ExitToEntry` and `Termination` edges, which no terminator takes (a frame left
//! abnormally ends inside a call). Parallel edges (two `switch` cases to one block) stay distinct, so a vertex
//! with two out-edges to one block is a predicate too: the trace then tells the two edges apart, and the edge
//! counts derived from it equal edge mode's.

use crate::graph::{BlockId, Cfg, EdgeId, EdgeKind};

/// How many call sites each block holds (0: none). A call is where a callee's trace is written into the
/// caller's, so the placement blocks witnesses before it (§4.2) and the regenerator reads the callee's
/// activations there; one entry per real block. Blocks ending in an `invoke` ([`CallSites::with_invokes`]):
/// their last call site is the `invoke`, and its unwind edge (successor 1) is not traced by a decision — an
/// unwind marker written at the landing pad says it was taken (`regenerate`, "Unwinding").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSites {
    counts: Vec<u32>,
    invokes: Vec<bool>,
}

/// A [`CallSites`] list that does not fit its CFG.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{found} call-site counts given for {expected} blocks")]
pub struct CallSitesMismatch {
    /// Real blocks in the CFG.
    pub expected: usize,
    /// Counts given.
    pub found: usize,
}

/// An `invoke` block ([`CallSites::with_invokes`]) that is not a real block with a call site.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("block {0} is said to end in an invoke but holds no call site")]
pub struct InvokeMismatch(pub u32);

impl CallSites {
    /// A function without calls.
    pub fn none(cfg: &Cfg) -> CallSites {
        CallSites { counts: vec![0; cfg.num_blocks()], invokes: vec![false; cfg.num_blocks()] }
    }

    /// `counts[b]` call sites in block `b`, for every real block of `cfg`.
    pub fn new(cfg: &Cfg, counts: Vec<u32>) -> Result<CallSites, CallSitesMismatch> {
        if counts.len() != cfg.num_blocks() {
            return Err(CallSitesMismatch { expected: cfg.num_blocks(), found: counts.len() });
        }
        let invokes = vec![false; counts.len()];
        Ok(CallSites { counts, invokes })
    }

    /// The same, with `blocks` ending in an `invoke` (its last call site; its successor 1 is the unwind edge).
    /// Refuses a block that is not real or holds no call site.
    pub fn with_invokes(mut self, blocks: &[u32]) -> Result<CallSites, InvokeMismatch> {
        for &b in blocks {
            if self.counts.get(b as usize).is_none_or(|&n| n == 0) {
                return Err(InvokeMismatch(b));
            }
            self.invokes[b as usize] = true;
        }
        Ok(self)
    }

    /// Call sites in `b` (0 for EXIT).
    pub fn count(&self, b: BlockId) -> u32 {
        self.counts.get(b.index()).copied().unwrap_or(0)
    }

    /// Whether `b` ends in an `invoke`.
    pub fn ends_in_invoke(&self, b: BlockId) -> bool {
        self.invokes.get(b.index()).copied().unwrap_or(false)
    }

    /// Whether `e` is an `invoke`'s unwind edge (successor 1 of a block ending in an `invoke`).
    pub fn is_unwind(&self, cfg: &Cfg, e: EdgeId) -> bool {
        let edge = cfg.edge(e);
        edge.kind == (EdgeKind::Branch { succ: 1 }) && self.ends_in_invoke(edge.from)
    }
}

/// Whether tracing follows `kind` (see the module docs).
pub(crate) fn is_traced(kind: EdgeKind) -> bool {
    matches!(kind, EdgeKind::Branch { .. } | EdgeKind::Return)
}

/// Traced out- and in-edges per vertex, in `EdgeId` order, and the vertices that block witnesses.
pub(crate) struct TracingView {
    out: Vec<Vec<EdgeId>>,
    inc: Vec<Vec<EdgeId>>,
    /// EXIT, blocks with call sites, and blocks that may be left abnormally (`Termination` sources: the frame
    /// ends inside a call there).
    blocked: Vec<bool>,
}

impl TracingView {
    pub(crate) fn new(cfg: &Cfg, calls: &CallSites) -> TracingView {
        let n = cfg.num_vertices();
        let mut out = vec![Vec::new(); n];
        let mut inc = vec![Vec::new(); n];
        let mut blocked = vec![false; n];
        blocked[cfg.exit().index()] = true;
        for (e, edge) in cfg.edge_ids().zip(cfg.edges()) {
            if calls.is_unwind(cfg, e) {
                continue; // taken when the landing pad's unwind marker says so, not by a decision
            }
            if is_traced(edge.kind) {
                out[edge.from.index()].push(e);
                inc[edge.to.index()].push(e);
            } else if edge.kind == EdgeKind::Termination {
                blocked[edge.from.index()] = true;
            }
        }
        for (b, blocked) in blocked.iter_mut().enumerate().take(cfg.num_blocks()) {
            *blocked |= calls.count(BlockId::from_index(b)) > 0;
        }
        TracingView { out, inc, blocked }
    }

    pub(crate) fn out_edges(&self, v: BlockId) -> &[EdgeId] {
        &self.out[v.index()]
    }

    pub(crate) fn in_edges(&self, v: BlockId) -> &[EdgeId] {
        &self.inc[v.index()]
    }

    /// A vertex whose next step is a decision: two or more traced out-edges.
    pub(crate) fn is_predicate(&self, v: BlockId) -> bool {
        self.out[v.index()].len() >= 2
    }

    pub(crate) fn is_blocked(&self, v: BlockId) -> bool {
        self.blocked[v.index()]
    }

    pub(crate) fn num_vertices(&self) -> usize {
        self.out.len()
    }
}

/// ⌈log2 n⌉: the bits that tell `n` values apart (0 for n ≤ 1).
pub(crate) fn bits_for(n: u64) -> u8 {
    if n <= 1 {
        0
    } else {
        (64 - (n - 1).leading_zeros()) as u8
    }
}
