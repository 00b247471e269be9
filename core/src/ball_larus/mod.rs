//! Ball–Larus intraprocedural path profiling (Ball & Larus, "Efficient Path Profiling", MICRO-29, 1996).
//!
//! Every acyclic path segment of a function gets a number in `0..NumPaths`, computed at run time as a sum of
//! increments on a few chord edges. The modules follow the pipeline, and [`crate::melski_reps`] uses the same
//! file names for the same jobs in the interprocedural case:
//!
//! 1. [`dag`]: the CFG with back edges replaced by surrogate edges (§3.3), the graph every path lives in.
//! 2. [`budget`]: cuts that bound the path count of a huge DAG so path numbers fit a register.
//! 3. [`numbering`]: NumPaths per vertex and Val per DAG edge (§3.1, Figure 5).
//! 4. [`increments`]: Val moved onto the chords of a maximum spanning tree (§3.3–3.4, event counting).
//! 5. [`regenerate`]: path number ↔ DAG path ↔ cfg blocks and edges (§3.5).
//! 6. [`counts`]: edge and block counts derived from counted paths.
//! 7. [`arrivals`]: net counts of truncated paths from arrival counts (one counter update per call that may
//!    not return) and fork re-entries.
//! 8. [`promoted_paths`]: the few path numbers a loop's back edge counts once the loop is running, which the
//!    pass tests for so that their counts can live in registers.
//! 9. [`resets`]: the loop headers that restart every path entering them, so that a loop's back edge counts
//!    the same numbers from its first iteration on.
//! 10. [`hoisting`]: a back edge's count moved to the edges where its path number is decided, so that it has
//!     a constant address.

pub mod arrivals;
pub mod budget;
pub mod counts;
pub mod dag;
pub mod hoisting;
pub mod increments;
pub mod numbering;
pub mod promoted_paths;
pub mod regenerate;
pub mod resets;

#[cfg(test)]
mod tests_paper;
#[cfg(test)]
mod tests_prop;

pub use arrivals::{net_counts_from_arrivals, net_counts_with_reentries, truncation_block, NetDagPath};
pub use budget::{DEFAULT_PATH_BUDGET, MAX_GREEDY_CUTS};
pub use counts::{
    edge_counts_from_paths, signed_edge_counts_from_dag_paths, signed_edge_counts_from_paths, DerivedCounts,
    SignedDerivedCounts,
};
pub use dag::{CfgEdgeRole, DagEdge, DagEdgeId, DagEdgeKind, DagError, PathDag};
pub use hoisting::{hoisted_count_sites, HoistedCount, HoistedSite, Uncount, HOISTED_SITES_MAX, HOISTED_UNCOUNTS_MAX};
pub use increments::{IncrementError, Increments};
pub use numbering::{Numbering, NumberingError};
pub use promoted_paths::{promoted_dag_paths, promoted_paths};
pub use regenerate::{check_path, decode, encode, to_cfg_path, CfgPath, DecodeError, PathEnd, PathStart};
pub use resets::ResetRule;
