//! pathprof-analysis: what a read profile says — every edge and block count of a function with an honest
//! "exact" verdict, and the executed paths behind path-mode and interprocedural counts.
//!
//! The layering is `pathprof-core` (algorithms) → `pathprof-format` (the wire format: layout, metadata,
//! reader, writer, merge) → this crate → the CLI and the pass's profile-use modes. Modules, each depending only
//! on those before it:
//! - [`judge`]: turns signed derived counts into [`FunctionCounts`] and the reasons they are not exact.
//! - [`paths`]: path mode (Ball & Larus, "Efficient Path Profiling", MICRO-29, 1996, §3.5, implemented in
//!   [`pathprof_core::regenerate`]).
//! - [`interproc`]: context and piecewise modes (Melski & Reps, CC 1999, implemented in
//!   [`pathprof_core::interproc`]).
//! - [`rank`]: the hottest-first order of counted paths.
//! - [`counts`]: [`function_edge_counts`] and [`ModuleCounts`] for every mode; edge mode from chord counters
//!   (Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, Figure 6, implemented in
//!   [`pathprof_core::propagate`]).
//!
//! Inputs are untrusted (hand-built or read profiles): nothing here panics on them, which the clippy lints
//! below help keep true.
#![deny(missing_docs)]
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

pub mod counts;
pub mod interproc;
pub mod judge;
pub mod paths;
pub mod rank;

pub use counts::{function_edge_counts, ModuleCounts};
pub use interproc::{module_path_counts, program_of, InterprocCount, ModulePaths, PathDecoder};
pub use judge::{AnalysisError, FunctionCounts, InexactReason};
pub use paths::{function_path_counts, FunctionPaths, PathCount};
pub use rank::{hottest, Ranked};
