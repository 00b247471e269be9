//! Control dependence and slicing for programs with arbitrary jumps (Ball's thesis, 1993, chapters 5–6; Ball &
//! Horwitz, "Slicing Programs with Arbitrary Control-flow", AADEBUG 1993).
//!
//! The classic PDG slice (backward closure over control and flow dependences) drops jumps a slice needs: a
//! `break` or `goto` has no dependences of its own in the standard CFG. On the *augmented* CFG, where a jump is a
//! pseudo-predicate whose true arc goes to its target and whose never-executed false ("dummy") arc to its
//! continuation, the same closure keeps exactly the jumps needed, and deleting everything else yields the minimal
//! flow/path-projection: every kept vertex computes the same value sequence as in the program.
//!
//! The modules follow the pipeline; [`Pdg::build`] and [`Pdg::slice`] run it:
//! 1. [`program`]: the labelled statement-level CFG with def/use sets, filled by the caller (the pass, from IR).
//! 2. [`dominators`] / [`postdom`]: Cooper–Harvey–Kennedy on the reversed graph; infinite loops get a virtual
//!    never-taken exit arc.
//! 3. [`control`]: control dependence, dummy arcs included.
//! 4. [`flow`]: flow dependence by reaching definitions, dummy arcs excluded.
//! 5. [`slice`]: the backward closure and the slice's CFG (each kept vertex's successor per label), for the
//!    rewriter that builds the executable slice.
//!
//! [`diff`] (thesis ch. 7) compares two versions: the vertices whose ordered PDG slices differ; [`versions`]
//! applies it to whole translation units (correspondence by source line, changes carried across calls).

pub mod control;
pub mod diff;
pub mod dominators;
pub mod flow;
pub mod postdom;
pub mod program;
pub mod slice;
pub mod versions;

#[cfg(test)]
mod lang;
#[cfg(test)]
mod tests_diff;
#[cfg(test)]
mod tests_paper;
#[cfg(test)]
mod tests_prop;
#[cfg(test)]
mod tests_versions;

pub use control::ControlDeps;
pub use diff::{diff, Behaviour, DiffError};
pub use dominators::{dominator_tree, DominatorTree};
pub use flow::FlowDeps;
pub use postdom::Postdominators;
pub use program::{Arc, Label, Loc, ProgramGraph, ProgramGraphError, StmtId, Vertex};
pub use slice::{eliminate, NotACfg, Pdg, Slice, SliceArc};
