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
//! - [`dag`], [`numbering`], [`increments`], [`regenerate`]: Ball–Larus path profiling (MICRO 1996).
//! - [`reentry`]: fork re-entries (activations a `fork()`ed child resumes) as measured virtual edges.
//! - [`interproc`]: Melski–Reps interprocedural context and piecewise path profiling (CC 1999 / TR-1382).
#![deny(missing_docs)]

pub mod arrivals;
pub mod chains;
pub mod dag;
pub mod dfs;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod graph;
pub mod increments;
pub mod interproc;
pub mod loops;
pub mod numbering;
pub mod placement;
pub mod promotion;
pub mod propagate;
pub mod reentry;
pub mod regenerate;
pub mod spanning;
pub mod weighting;

pub use graph::{Adjacency, BlockId, Cfg, CfgError, Edge, EdgeId, EdgeKind};
