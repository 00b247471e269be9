//! pathprof-core: the profiling algorithms, with no LLVM dependency.
//!
//! The pass builds a [`graph::Cfg`] from LLVM IR and asks this crate where counters go; the `pathprof` CLI
//! rebuilds the same `Cfg` from the profile's metadata and asks this crate what the counters mean. Keeping one
//! implementation here is what makes the two agree.
//!
//! # Modules
//! - [`graph`]: the CFG multigraph with virtual EXIT (Ball & Larus, TOPLAS 1994, §2).
//! - [`chains`]: straight-line chains of blocks (one graph, however straight-line code is cut into blocks).
//! - [`dfs`]: iterative depth-first search, back edges.
//! - [`loops`]: natural loops (for the BL94 §5 weighting).
//! - [`weighting`]: edge weightings that steer the spanning tree.
//! - [`spanning`]: maximum spanning tree with forced edges (Knuth–Stevenson / BL94 §3.2).
//! - [`placement`]: optimal edge-counter placement, Eprof(Ecnt).
//! - [`propagate`]: deriving every edge and block count from the chord counts (BL94 Figure 6).
//! - [`vertex_profile`]: block counts from fewer edge counters, Vprof(Ecnt) (BL94 §3.3).
//! - [`reentry`]: fork re-entries (activations a `fork()`ed child resumes) as measured virtual edges.
//! - [`ball_larus`]: Ball–Larus path profiling (MICRO 1996).
//! - [`tracing`]: optimal control-flow tracing with witnesses, bit tracing, entropy coding, and regeneration
//!   (BL94 §4, thesis §3.2).
//! - [`cache`]: Mueller–Whalley unique paths, function instances and static instruction-cache simulation.
//! - [`slicing`]: postdominators, control dependence with jumps as pseudo-predicates, flow dependence, and
//!   executable backward slices of programs with arbitrary jumps (Ball's thesis, chapters 5–6).
//! - [`melski_reps`]: Melski–Reps interprocedural context and piecewise path profiling (CC 1999 / TR-1382),
//!   built on the Ball–Larus DAG; its files carry the same names as their Ball–Larus counterparts.
//!
//! The paths of the earlier flat layout (`dag`, `numbering`, `increments`, `regenerate`, `arrivals`,
//! `interproc`) are kept as re-exports, so code written against them keeps compiling.
#![deny(missing_docs)]

pub mod ball_larus;
pub mod cache;
pub mod chains;
pub mod dfs;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod graph;
pub mod loops;
pub mod melski_reps;
pub mod placement;
pub mod promotion;
pub mod propagate;
#[cfg(test)]
mod random_cfg;
pub mod reentry;
pub mod slicing;
pub mod spanning;
#[cfg(test)]
mod test_rng;
pub mod tracing;
pub mod vertex_profile;
pub mod weighting;

pub use graph::{Adjacency, BlockId, Cfg, CfgError, Edge, EdgeId, EdgeKind};

// The flat layout's module paths, used by the other crates.
pub use ball_larus::{arrivals, increments, numbering};
pub use melski_reps as interproc;

/// The flat layout's `dag` path: [`ball_larus::dag`] with the budget constants, now in [`ball_larus::budget`].
pub mod dag {
    pub use crate::ball_larus::budget::{DEFAULT_PATH_BUDGET, MAX_GREEDY_CUTS};
    pub use crate::ball_larus::dag::*;
}

/// The flat layout's `regenerate` path: [`ball_larus::regenerate`] with the path-to-edge counts, now in
/// [`ball_larus::counts`].
pub mod regenerate {
    pub use crate::ball_larus::counts::*;
    pub use crate::ball_larus::regenerate::*;
}
