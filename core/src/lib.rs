//! pathprof-core: the profiling algorithms, with no LLVM dependency.
//!
//! The pass builds a [`graph::Cfg`] from LLVM IR and asks this crate where counters go; the `pathprof` CLI
//! rebuilds the same `Cfg` from the profile's metadata and asks this crate what the counters mean. Keeping one
//! implementation here is what makes the two agree.
//!
//! # Modules
//! - [`graph`]: the CFG multigraph with virtual EXIT (Ball & Larus, TOPLAS 1994, §2).
#![deny(missing_docs)]

pub mod graph;

pub use graph::{Adjacency, BlockId, Cfg, CfgError, Edge, EdgeId, EdgeKind};
