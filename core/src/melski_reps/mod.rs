//! Melski–Reps interprocedural path profiling: context paths (§5) and piecewise paths (§6).
//!
//! David Melski and Thomas Reps, "Interprocedural Path Profiling", CC 1999 (LNCS 1575) / University of
//! Wisconsin–Madison Computer Sciences TR-1382, 1998. Ball–Larus numbering assigns each intraprocedural
//! acyclic path a number in `0..NumPaths`; Melski–Reps extend it to paths that cross procedure boundaries by
//! numbering the *observable paths* of a transformed supergraph G*_fn with vertex functions ψ and edge functions
//! ρ, linear functions λx.a·x + b of "the number of valid completions from the current procedure's exit".
//!
//! Invariant (Theorem 4.1): for each [`Mode`], the observable paths of G*_fn are numbered densely and
//! bijectively by `0..Numbering::num_paths()`; [`encode`] (Algorithms 5.1/6.1), [`decode`] (Algorithm 5.2 and
//! its piecewise extension) and the runtime [`Simulator`] (§5.5/§6.3) all agree on that numbering. All
//! arithmetic is checked `u128`: an overflow is an error, never a wrap.
//!
//! # Pipeline
//! 1. [`Program`]: procedures (each a [`Cfg`](crate::graph::Cfg)) with call sites; see [`program`] for how a
//!    call site is modelled (a call block whose single branch leads to its return-site block).
//! 2. [`Supergraph::build`] ([`supergraph`]): Transformations 1–3 — the Ball–Larus DAG of every procedure
//!    (reused from [`crate::ball_larus::dag`]) and the call-graph DFS that turns recursive call sites into
//!    summary edges and picks the roots ([`CallGraph`]).
//! 3. [`Supergraph::number`] ([`numbering`]): ψ/ρ for [`Mode::Context`] or [`Mode::Piecewise`] (with
//!    numUnbalRLPaths and the Eq. 35 return-edge values), and the Entry_global offsets.
//! 4. [`encode`] / [`decode`] ([`regenerate`]): path ↔ number, with [`InterprocPath`] marking calls, returns,
//!    summary edges, surrogate edges and the context-prefix.
//! 5. [`Simulator`]: what the instrumented program records for an [`Execution`].
//! 6. [`signed_edge_counts`] ([`counts`]): edge counts from counted paths; [`net_counts_from_arrivals`]
//!    ([`arrivals`]): net path counts from a profile whose truncated paths count arrivals.
//!
//! # Errata applied
//! Algorithm 6.1's unbalanced return sets NVC := numUnbalRLPaths\[Exit_S\] (not ψ_r(…)); Entry_global→GEntry_P
//! counts ψ_{GEntry_P}(numUnbalRLPaths\[Exit_P\]) (not \[GExit_P\], as TR-1382 §6.1.2 prints it). The
//! paper-oracle tests (`tests_paper.rs`) check both: the Entry_global offsets of the pow example (§6.1.2), and
//! a program where the printed Algorithm 6.1 would give two paths one number.

pub mod arrivals;
pub mod callgraph;
pub mod counts;
pub mod linear;
pub mod numbering;
pub mod path;
pub mod potentials;
pub mod program;
pub mod regenerate;
pub mod simulate;
pub mod supergraph;
pub mod units;

#[cfg(test)]
mod tests_fork;
#[cfg(test)]
mod tests_paper;
#[cfg(test)]
mod tests_prop;

pub use arrivals::{
    counted_termination, ends_at_counted_termination, net_counts_from_arrivals, net_counts_streaming,
    net_counts_with_reentries, ArrivalError, NetPath,
};
pub use callgraph::{CallGraph, SiteRole};
pub use counts::{signed_edge_counts, signed_edge_counts_with_reentries, EdgeCounter, EdgeCountsWithReentries};
pub use linear::Linear;
pub use numbering::{
    ArcKind, EntryKind, ExitSucc, ExitTarget, GlobalEntry, InvariantViolation, Mode, Numbering, NumberingError, OutArc,
    Unit,
};
pub use path::{InterprocPath, PathEnd, Step, Via};
pub use program::{CallSite, CallSiteId, Callee, ProcId, Procedure, Program, ProgramError, SiteInfo};
pub use regenerate::{
    decode, decode_visiting, decode_with_limit, encode, walk, walk_tails, PathError, PathTail, WalkState,
    DEFAULT_MAX_STEPS,
};
pub use simulate::{Event, Execution, Profile, Simulator, TraceError};
pub use supergraph::Supergraph;
pub use units::finest_units;
