//! Judging derived counts: the one place that decides whether a function's counts are exact, and why not.
//!
//! Every analysis ([`crate::counts`] for edge mode, [`crate::paths`] for path mode, [`crate::interproc`] for the
//! context and piecewise modes) derives signed counts its own way and hands them to [`judge`], so all modes
//! report negative, oversized and non-conserved counts and the record's flags with the same reasons.

use pathprof_core::dag::DagError;
use pathprof_core::numbering::NumberingError;
use pathprof_core::propagate::PropagateError;
use pathprof_core::regenerate::DecodeError;
use pathprof_core::{BlockId, Cfg, EdgeId, EdgeKind};
use pathprof_format::layout::{
    RECORD_FLAG_DROPPED, RECORD_FLAG_HANDLER_ESCAPED, RECORD_FLAG_INCOMPLETE, RECORD_FLAG_THREADED_NONATOMIC,
    RECORD_FLAG_THREADS_IN_FLIGHT,
};
use pathprof_format::meta::FunctionMeta;
use pathprof_format::profile::ModuleProfile;
use std::fmt;

/// All counts of one function, measured by chord counters (edge mode) or derived from path counts (path mode).
/// Counts that are negative (or above `u64::MAX`) are `None`: they are evidence that the profile is inexact,
/// never numbers to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCounts {
    /// Per edge in `EdgeId` order (virtual edges included): how often it was taken.
    pub edges: Vec<Option<u64>>,
    /// Per edge: the value propagation (or the path sums) derived, possibly negative. For diagnostics only.
    pub raw_edges: Vec<i128>,
    /// Per edge: whether the edge carries instrumentation code. Edge mode: its count was measured by a counter
    /// (a chord) rather than derived. Path mode: it updates the path register or counts a path
    /// (`PathMeta::instrumented_edges`).
    pub measured: Vec<bool>,
    /// Per real block (EXIT excluded): how often it ran, the sum of its incoming edge counts (for the entry
    /// block this includes the EXIT→entry edge, i.e. the invocations) and of its fork re-entries.
    pub blocks: Vec<Option<u64>>,
    /// Per real block: how often a `fork()`ed child resumed an activation in flight at the fork in a call of this
    /// block (the virtual edge EXIT→block; all 0 without forks).
    pub fork_reentries: Vec<u64>,
    /// Invocations: the derived count of the EXIT→entry edge.
    pub entry: Option<u64>,
    /// True when every count above is exact: no reasons below.
    pub exact: bool,
    /// Why the counts are not exact; empty when `exact`.
    pub inexact_reasons: Vec<InexactReason>,
}

/// One reason a function's counts cannot be trusted as exact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InexactReason {
    /// Propagation derived a negative count for an edge that cannot legitimately be negative.
    NegativeEdge {
        /// The edge.
        edge: EdgeId,
        /// Its source.
        from: BlockId,
        /// Its target.
        to: BlockId,
        /// The derived value.
        value: i128,
    },
    /// Propagation derived a count above `u64::MAX` for an edge.
    TooLarge {
        /// The edge.
        edge: EdgeId,
        /// The derived value.
        value: i128,
    },
    /// A block's execution count (the sum of its incoming edges) is above `u64::MAX`.
    BlockTooLarge {
        /// The block.
        block: BlockId,
        /// The derived value.
        value: i128,
    },
    /// In-flow differs from out-flow at a block after propagation (edge mode) or in the path-derived counts
    /// (path mode: some path segment started at a loop header or cut without one ending there).
    ConservationViolation {
        /// The block.
        block: BlockId,
    },
    /// A path was counted a negative number of times and is not the termination path of a `setjmp` block
    /// (the only path whose net count, departures minus `longjmp` re-entries, can legitimately be negative).
    NegativePath {
        /// The Ball–Larus path number.
        path: u128,
        /// Its (negative) net count.
        count: i64,
    },
    /// A count names a path number the function (path mode) or module (interprocedural modes, whose numbers are
    /// module-wide) does not have: the file is intact, but its counts cannot be accounted for. The count is
    /// left out; the rest is derived as usual and flagged.
    PathOutOfRange {
        /// The path number found.
        path: u128,
        /// The number of paths.
        num_paths: u128,
    },
    /// A run ended in a way the runtime could not vouch for (`RECORD_FLAG_INCOMPLETE`).
    Incomplete,
    /// Counters were updated non-atomically by several threads (`RECORD_FLAG_THREADED_NONATOMIC`).
    ThreadedNonatomic,
    /// A signal handler did not return (`RECORD_FLAG_HANDLER_ESCAPED`).
    HandlerEscaped,
    /// The process ended while another thread was running (`RECORD_FLAG_THREADS_IN_FLIGHT`).
    ThreadsInFlight,
    /// The runtime dropped path updates: a path table was full, memory could not be mapped, or a signal handler's
    /// updates overflowed what can wait for a busy table (`RECORD_FLAG_DROPPED`).
    Dropped,
    /// The record carries flags this pathprof does not know.
    UnknownFlags(u64),
    /// A fork re-entry count is negative (only in a corrupt or inconsistently merged profile).
    NegativeReentry {
        /// The block.
        block: BlockId,
    },
    /// Block mode: the counters do not determine this block's count (an uncounted cycle has a pipe there; only
    /// with a placement pathprof did not make). The count is left out, never guessed.
    BlockNotDerivable {
        /// The block.
        block: BlockId,
    },
    /// Block mode: a block's derived count is negative (inconsistent counters, e.g. lost increments).
    NegativeBlock {
        /// The block.
        block: BlockId,
    },
}

impl fmt::Display for InexactReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The value itself is not shown: a negative "count" must never be read as a number.
            InexactReason::NegativeEdge { edge, from, to, .. } => {
                write!(f, "edge {edge} ({from}->{to}) derived as negative")
            }
            InexactReason::TooLarge { edge, value } => write!(f, "edge {edge} derived as {value}, above 2^64-1"),
            InexactReason::BlockTooLarge { block, value } => {
                write!(f, "block {block} derived as {value}, above 2^64-1")
            }
            InexactReason::ConservationViolation { block } => write!(f, "flow is not conserved at {block}"),
            InexactReason::NegativePath { path, .. } => write!(f, "path {path} counted a negative number of times"),
            InexactReason::PathOutOfRange { path, num_paths } => {
                write!(f, "a count for path {path}, but only {num_paths} paths (left out)")
            }
            InexactReason::Incomplete => write!(f, "a run ended abnormally, counts are a lower bound"),
            InexactReason::ThreadedNonatomic => {
                write!(f, "counters were updated non-atomically by several threads, increments may be lost")
            }
            InexactReason::HandlerEscaped => write!(
                f,
                "a signal handler did not return (longjmp or exit from a handler): the activations it interrupted are not counted exactly"
            ),
            InexactReason::ThreadsInFlight => write!(
                f,
                "the process ended while another thread was running: an activation it had in flight is not counted exactly"
            ),
            InexactReason::Dropped => write!(
                f,
                "the runtime dropped path counts (a path table was full: see PATHPROF_TABLE_CAP_LOG2; or out of memory), counts are a lower bound"
            ),
            InexactReason::UnknownFlags(x) => write!(f, "the record has unknown flags {x:#x}"),
            InexactReason::NegativeReentry { block } => write!(f, "fork re-entries of {block} counted as negative"),
            InexactReason::BlockNotDerivable { block } => {
                write!(f, "the counters do not determine the count of {block}")
            }
            InexactReason::NegativeBlock { block } => write!(f, "block {block} derived as negative"),
        }
    }
}

/// Why counts cannot be derived for a function.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    /// No function with that index.
    #[error("module {module} has no function #{index} (it has {num_functions})")]
    FunctionOutOfRange {
        /// Module name.
        module: String,
        /// The index asked for.
        index: usize,
        /// Functions in the module.
        num_functions: usize,
    },
    /// Path counts were asked of a module whose counters are not path counters.
    #[error("module {module} was profiled in {mode} mode: its counters are not path counters")]
    NotPathMode {
        /// Module name.
        module: String,
        /// The module's mode name.
        mode: &'static str,
    },
    /// A function of a path-mode module has no [`pathprof_format::meta::PathMeta`] (only for hand-built profiles: `read`
    /// validates this).
    #[error("corrupt profile: function {function} of module {module} is in a path-mode module but has no path data")]
    MissingPathData {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
    },
    /// The path numbering rebuilt from the graph and budget does not have the recorded number of paths: the
    /// counts cannot be decoded (a corrupt profile, or one written by an incompatible pathprof).
    #[error(
        "corrupt profile: function {function} of module {module} records {recorded} paths, but its graph and \
         budget give {recomputed}"
    )]
    NumPathsMismatch {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
        /// `PathMeta::num_paths`.
        recorded: u128,
        /// NumPaths(ENTRY) of the rebuilt DAG.
        recomputed: u128,
    },
    /// A dense-storage function also has hashed path counts (the runtime only hashes `Hashed` functions).
    #[error("corrupt profile: function {function} of module {module} has dense path counters and hashed path counts")]
    MixedPathStorage {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
    },
    /// The path DAG could not be rebuilt with the recorded budget.
    #[error("corrupt profile: function {function} of module {module}: cannot rebuild its path numbering: {error}")]
    PathDag {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
        /// What the DAG construction reported.
        error: DagError,
    },
    /// The rebuilt DAG could not be numbered.
    #[error("corrupt profile: function {function} of module {module}: cannot number its paths: {error}")]
    PathNumbering {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
        /// What the numbering reported.
        error: NumberingError,
    },
    /// A path number could not be regenerated, or its counts not summed.
    #[error("corrupt profile: function {function} of module {module}: cannot decode its paths: {error}")]
    PathDecode {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
        /// What regeneration reported.
        error: DecodeError,
    },
    /// The function's counters are outside the module's counter array (only for hand-built profiles: `read`
    /// checks this).
    #[error("function {function} of module {module} has counters outside the module's counter array")]
    CounterOutOfRange {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
    },
    /// A context or piecewise module's program, numbering or path counts are inconsistent.
    #[error("corrupt profile: module {module}: interprocedural paths: {reason}")]
    Interproc {
        /// Module name.
        module: String,
        /// What is wrong.
        reason: String,
    },
    /// A fork re-entry names a block or path that cannot have been in flight at a fork.
    #[error("corrupt profile: function {function} of module {module}: {reason}")]
    Reentry {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
        /// What is wrong.
        reason: String,
    },
    /// Propagation refused the graph or the counter placement.
    #[error("function {function} of module {module}: {error}")]
    Propagate {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
        /// What propagation reported.
        error: PropagateError,
    },
}

/// Turns signed derived counts into [`FunctionCounts`]: negative counts (except the `Termination` edges of
/// re-entry blocks) and counts above `u64::MAX` become `None` with a reason, as do conservation violations
/// and the record's flags. `reentries` are the fork re-entries per block (empty: none). `leading` reasons (e.g.
/// negative path counts) come first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn judge(
    module: &ModuleProfile,
    f: &FunctionMeta,
    raw_edges: Vec<i128>,
    raw_vertices: &[i128],
    reentries: &[i128],
    conservation_violations: &[BlockId],
    measured: Vec<bool>,
    leading: Vec<InexactReason>,
) -> FunctionCounts {
    let cfg = &f.cfg;
    let mut reasons = leading;
    let mut edges = Vec::with_capacity(cfg.num_edges());
    for (i, (&value, e)) in raw_edges.iter().zip(cfg.edges()).enumerate() {
        let edge = EdgeId::from_index(i);
        let count = u64::try_from(value).ok();
        if value < 0 {
            let reentry = e.kind == EdgeKind::Termination && f.reentry_blocks.contains(&e.from.0);
            if !reentry {
                reasons.push(InexactReason::NegativeEdge { edge, from: e.from, to: e.to, value });
            }
        } else if count.is_none() {
            reasons.push(InexactReason::TooLarge { edge, value });
        }
        edges.push(count);
    }
    for &block in conservation_violations {
        reasons.push(InexactReason::ConservationViolation { block });
    }
    if module.flags & RECORD_FLAG_INCOMPLETE != 0 {
        reasons.push(InexactReason::Incomplete);
    }
    if module.flags & RECORD_FLAG_THREADED_NONATOMIC != 0 {
        reasons.push(InexactReason::ThreadedNonatomic);
    }
    if module.flags & RECORD_FLAG_HANDLER_ESCAPED != 0 {
        reasons.push(InexactReason::HandlerEscaped);
    }
    if module.flags & RECORD_FLAG_THREADS_IN_FLIGHT != 0 {
        reasons.push(InexactReason::ThreadsInFlight);
    }
    if module.flags & RECORD_FLAG_DROPPED != 0 {
        reasons.push(InexactReason::Dropped);
    }
    let unknown = module.flags
        & !(RECORD_FLAG_INCOMPLETE
            | RECORD_FLAG_THREADED_NONATOMIC
            | RECORD_FLAG_HANDLER_ESCAPED
            | RECORD_FLAG_THREADS_IN_FLIGHT
            | RECORD_FLAG_DROPPED);
    if unknown != 0 {
        reasons.push(InexactReason::UnknownFlags(unknown));
    }
    let mut blocks = Vec::with_capacity(cfg.num_blocks());
    for (i, &value) in raw_vertices.iter().take(cfg.num_blocks()).enumerate() {
        let count = u64::try_from(value).ok();
        // A negative block count needs a negative in-edge, already reported above.
        if value > 0 && count.is_none() {
            reasons.push(InexactReason::BlockTooLarge { block: BlockId::from_index(i), value });
        }
        blocks.push(count);
    }
    let mut fork_reentries = vec![0u64; cfg.num_blocks()];
    for (i, (&r, slot)) in reentries.iter().zip(fork_reentries.iter_mut()).enumerate() {
        match u64::try_from(r) {
            Ok(v) => *slot = v,
            Err(_) => reasons.push(InexactReason::NegativeReentry { block: BlockId::from_index(i) }),
        }
    }
    let entry = edges.get(cfg.exit_to_entry().index()).copied().flatten();
    FunctionCounts {
        measured,
        raw_edges,
        edges,
        blocks,
        fork_reentries,
        entry,
        exact: reasons.is_empty(),
        inexact_reasons: reasons,
    }
}

/// Vertices (EXIT included, in id order) whose in-flow differs from their out-flow in path-derived counts. A
/// consistent profile conserves flow everywhere: every path segment that ends at a back or cut edge is followed
/// by one that starts at its target, and every invocation leaves through EXIT. `reentries` (per block, may be
/// empty) are fork re-entries: virtual edges EXIT→block.
pub(crate) fn conservation_violations(cfg: &Cfg, edges: &[i128], reentries: &[i128]) -> Vec<BlockId> {
    let n = cfg.num_vertices();
    let mut flow_in = vec![0i128; n];
    let mut flow_out = vec![0i128; n];
    for (b, &r) in reentries.iter().enumerate() {
        if let Some(x) = flow_in.get_mut(b) {
            *x = x.saturating_add(r);
        }
        if let Some(x) = flow_out.get_mut(cfg.exit().index()) {
            *x = x.saturating_add(r);
        }
    }
    for (e, &c) in cfg.edges().iter().zip(edges) {
        if let Some(x) = flow_in.get_mut(e.to.index()) {
            *x = x.saturating_add(c);
        }
        if let Some(x) = flow_out.get_mut(e.from.index()) {
            *x = x.saturating_add(c);
        }
    }
    flow_in
        .iter()
        .zip(&flow_out)
        .enumerate()
        .filter(|(_, (i, o))| i != o)
        .map(|(v, _)| BlockId::from_index(v))
        .collect()
}
