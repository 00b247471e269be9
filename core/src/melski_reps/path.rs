//! Observable interprocedural paths as the decoder returns them and the encoder accepts them.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998, §3.4: an observable
//! path of context profiling is a *context-prefix* — up to and including the last surrogate edge Entry_P→v —
//! followed by an *active suffix*, the maximal surrogate-free tail (which may contain summary edges). The
//! counter of the path counts how often the active suffix ran in the context the prefix summarises. Piecewise
//! paths (§6) have no context-prefix.
//!
//! Invariant: an [`InterprocPath`] names every edge of G*_fn it takes, so it identifies the path exactly, also
//! in multigraphs (parallel `Branch` or `Return` edges are distinct paths): each [`Step`] is a block visit
//! together with the edge that led to it ([`Via`]), and [`PathEnd`] is the final edge into Exit_global. Steps
//! are one per vertex visited, in order; Exit_P, GExit_P and GEntry_P are implied by the `Via`/`PathEnd`.

use super::program::{CallSiteId, ProcId};
use crate::graph::{BlockId, EdgeId};
use std::fmt;

/// How a block visit was reached: the G*_fn edge(s) just before it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Via {
    /// Entry_global→Entry_P: the path starts at the entry block of root P (a fresh activation).
    RootEntry,
    /// Entry_global→GEntry_P→v (piecewise): the path starts at loop header v right after back edge `back`, in
    /// an activation whose callers the path does not record.
    MidEntry {
        /// The back edge just taken.
        back: EdgeId,
    },
    /// The intraprocedural `Branch` edge `edge`.
    Edge(EdgeId),
    /// The surrogate Entry_P→v (context): the path restarts at loop header v after back edge `back`, in the
    /// context of the path up to Entry_P — the context-prefix ends here ("starts at loop header").
    LoopRestart {
        /// The back edge just taken.
        back: EdgeId,
    },
    /// The call edge c→Entry_Q of `site`: this step is the callee's entry block.
    Call {
        /// The call site.
        site: CallSiteId,
    },
    /// The callee's `Return` edge `edge` into Exit_Q, then Exit_Q→r: this step is the return-site block r of
    /// `site`. In piecewise paths the matching call may precede the path (an unbalanced-right return).
    Return {
        /// The call site returned to.
        site: CallSiteId,
        /// The callee's `Return` edge (an edge of the callee's CFG).
        edge: EdgeId,
    },
    /// The summary edge c→r of a recursive, cut or external `site` ("recursive call elided"): the callee's
    /// activation is profiled as paths of its own.
    Summary {
        /// The call site.
        site: CallSiteId,
    },
}

/// One vertex visit.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// The procedure.
    pub proc: ProcId,
    /// The block visited.
    pub block: BlockId,
    /// How it was reached.
    pub via: Via,
}

/// How the path reaches Exit_global.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathEnd {
    /// `Return` edge `edge` of `proc` into Exit_P, then Exit_P→Exit_global: the activation the path started in
    /// (a root, or for piecewise paths any activation entered before the path) returns to outside the path.
    RootReturn {
        /// The procedure returning.
        proc: ProcId,
        /// Its `Return` edge.
        edge: EdgeId,
    },
    /// Surrogate w→GExit_P of back edge `back`: the path ends at the back edge's source ("ends at back edge").
    BackEdge {
        /// The procedure.
        proc: ProcId,
        /// The back edge.
        back: EdgeId,
    },
    /// `Termination` edge `edge` (treated as w→GExit_P): the path ends because the block was left abnormally.
    Termination {
        /// The procedure.
        proc: ProcId,
        /// The termination edge.
        edge: EdgeId,
    },
}

/// An observable path from Entry_global to Exit_global of G*_fn.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InterprocPath {
    /// The vertex visits in order; the first is reached by [`Via::RootEntry`] or [`Via::MidEntry`].
    pub steps: Vec<Step>,
    /// The final edge(s) into Exit_global.
    pub end: PathEnd,
}

impl InterprocPath {
    /// Number of steps in the context-prefix: the index of the last [`Via::LoopRestart`] step (0 if there is
    /// none; always 0 for piecewise paths). `steps[..n]` is the context-prefix (ending at Entry_P), and
    /// `steps[n..]` with `end` the active suffix.
    pub fn context_prefix_len(&self) -> usize {
        self.steps.iter().rposition(|s| matches!(s.via, Via::LoopRestart { .. })).unwrap_or(0)
    }

    /// The context-prefix steps (see [`InterprocPath::context_prefix_len`]).
    pub fn context_prefix(&self) -> &[Step] {
        &self.steps[..self.context_prefix_len()]
    }

    /// The active-suffix steps (see [`InterprocPath::context_prefix_len`]).
    pub fn active_suffix(&self) -> &[Step] {
        &self.steps[self.context_prefix_len()..]
    }

    /// The `(procedure, block)` visits in order.
    pub fn blocks(&self) -> impl Iterator<Item = (ProcId, BlockId)> + '_ {
        self.steps.iter().map(|s| (s.proc, s.block))
    }
}

impl fmt::Display for InterprocPath {
    /// `EG f0:bb0 -> f0:bb1 =call cs0=> f1:bb0 ... XG`, with `~loop(eN)~>` for surrogates, `=sum csN=>` for
    /// summary edges, `<=ret csN=` for returns and `|` marking the start of the active suffix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = self.context_prefix_len();
        write!(f, "EG")?;
        for (i, s) in self.steps.iter().enumerate() {
            if i == prefix && prefix > 0 {
                write!(f, " |")?;
            }
            match s.via {
                Via::RootEntry => write!(f, " =>")?,
                Via::MidEntry { back } => write!(f, " ~mid({back})~>")?,
                Via::Edge(_) => write!(f, " ->")?,
                Via::LoopRestart { back } => write!(f, " ~loop({back})~>")?,
                Via::Call { site } => write!(f, " =call {site}=>")?,
                Via::Return { site, .. } => write!(f, " <=ret {site}=")?,
                Via::Summary { site } => write!(f, " =sum {site}=>")?,
            }
            write!(f, " {}:{}", s.proc, s.block)?;
        }
        match self.end {
            PathEnd::RootReturn { .. } => write!(f, " => XG"),
            PathEnd::BackEdge { back, .. } => write!(f, " ~back({back})~> XG"),
            PathEnd::Termination { edge, .. } => write!(f, " ~term({edge})~> XG"),
        }
    }
}
