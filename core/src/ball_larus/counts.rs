//! Edge and block counts derived from counted Ball–Larus paths.
//!
//! The old LLVM `PathProfileVerifier` idea: the execution is the concatenation of its paths, so each path's real
//! edges get its count, a back (or cut) edge gets the count of the paths that end by taking it, and the
//! EXIT→entry edge gets the number of invocations; block counts then follow by summing in-edges. The result is
//! exact whenever every executed path was completed and counted. Path counts are signed in general
//! ([`signed_edge_counts_from_paths`]): the net count of a path ending with a `Termination` edge (arrivals minus
//! the executions that came back, see [`super::arrivals`]) is negative for a `setjmp` block re-entered by
//! `longjmp` more often than it was left; the accumulation is checked `i128`.

use super::dag::{DagEdgeId, DagEdgeKind, PathDag};
use super::numbering::Numbering;
use super::regenerate::{check_path, decode, DecodeError};
use crate::graph::Cfg;

/// Edge and block counts derived from (non-negative) path counts; see [`edge_counts_from_paths`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedCounts {
    /// Per cfg edge (indexed by `EdgeId::index`): how often it executed. The EXIT→entry edge holds the number
    /// of invocations; `Termination` edges hold abnormal departures (as far as the paths record them).
    pub edges: Vec<u128>,
    /// Per cfg vertex (indexed by `BlockId::index`, EXIT included): the sum of its in-edges' counts, so the
    /// entry block counts invocations plus re-entries through back edges into it, and EXIT counts departures.
    pub blocks: Vec<u128>,
    /// Invocations: paths that start at the entry block on entry rather than after a back or cut edge.
    pub invocations: u128,
}

/// Edge and block counts derived from *signed* path counts; see [`signed_edge_counts_from_paths`].
///
/// Path counts are signed because the net count of a path that ends with a `Termination` edge counts the
/// departures from its block minus the re-entries of a `setjmp` block by `longjmp` (whether the counters held
/// +1/−1 pairs or arrivals netted by [`super::arrivals`]), so it (and its `Termination` edge) can be
/// negative. Every other derived count of a real execution is non-negative; a negative one is evidence of an
/// inconsistent profile, and the values are returned as they are for the caller to judge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedDerivedCounts {
    /// Per cfg edge (indexed by `EdgeId::index`), as in [`DerivedCounts::edges`], possibly negative.
    pub edges: Vec<i128>,
    /// Per cfg vertex (EXIT included): the sum of its in-edges' counts, possibly negative.
    pub blocks: Vec<i128>,
    /// Invocations: the summed counts of the paths that start at the entry block on entry.
    pub invocations: i128,
}

/// The one accumulation of path counts into edge counts, shared by every `*edge_counts_from*` function.
struct Accumulator {
    edges: Vec<i128>,
    invocations: i128,
}

impl Accumulator {
    fn new(cfg: &Cfg, dag: &PathDag) -> Result<Accumulator, DecodeError> {
        if dag.num_cfg_edges() != cfg.num_edges() || dag.num_vertices() != cfg.num_vertices() {
            return Err(DecodeError::Mismatch);
        }
        Ok(Accumulator { edges: vec![0i128; cfg.num_edges()], invocations: 0 })
    }

    /// Adds `count` executions of the DAG path `path` (already checked with [`check_path`]).
    fn add(&mut self, dag: &PathDag, path: &[DagEdgeId], count: i128) -> Result<(), DecodeError> {
        let add = |slot: &mut i128| -> Result<(), DecodeError> {
            *slot = slot.checked_add(count).ok_or(DecodeError::Overflow)?;
            Ok(())
        };
        if count == 0 {
            return Ok(());
        }
        if let Some(&first) = path.first() {
            if !dag.edge(first).kind.starts_segment() {
                add(&mut self.invocations)?;
            }
        }
        for &d in path {
            match dag.edge(d).kind {
                DagEdgeKind::Real(e) | DagEdgeKind::ExitSurrogate { back: e } | DagEdgeKind::SplitExit { edge: e } => {
                    add(self.edges.get_mut(e.index()).ok_or(DecodeError::Mismatch)?)?
                }
                DagEdgeKind::EntrySurrogate { .. } | DagEdgeKind::SplitEntry { .. } | DagEdgeKind::ExitToEntry => {}
            }
        }
        Ok(())
    }

    fn finish(mut self, cfg: &Cfg) -> Result<SignedDerivedCounts, DecodeError> {
        if let Some(slot) = self.edges.get_mut(cfg.exit_to_entry().index()) {
            *slot = self.invocations;
        }
        let mut blocks = vec![0i128; cfg.num_vertices()];
        for (e, &c) in cfg.edges().iter().zip(&self.edges) {
            let slot = blocks.get_mut(e.to.index()).ok_or(DecodeError::Mismatch)?;
            *slot = slot.checked_add(c).ok_or(DecodeError::Overflow)?;
        }
        Ok(SignedDerivedCounts { edges: self.edges, blocks, invocations: self.invocations })
    }
}

/// Derives per-edge and per-block counts from signed path counts `(path number, count)` (repeated numbers add
/// up; `count` is any integer type that widens to `i128`, e.g. `u64` or `i64`).
///
/// Each path's real edges get its count; back and cut edges get the counts of the paths *ending* with their
/// exit surrogate (the next path, which starts with the entry surrogate, may never complete if the program
/// stops); the EXIT→entry edge gets the invocations. All sums are checked `i128`. Fails on a path number the
/// numbering cannot decode ([`DecodeError::OutOfRange`]); each decode is bounded by the DAG's size.
pub fn signed_edge_counts_from_paths<I, C>(
    cfg: &Cfg,
    dag: &PathDag,
    numbering: &Numbering,
    paths: I,
) -> Result<SignedDerivedCounts, DecodeError>
where
    I: IntoIterator<Item = (u128, C)>,
    C: Into<i128>,
{
    let mut acc = Accumulator::new(cfg, dag)?;
    for (r, count) in paths {
        let count: i128 = count.into();
        if count == 0 {
            continue;
        }
        let path = decode(dag, numbering, r)?;
        acc.add(dag, &path, count)?;
    }
    acc.finish(cfg)
}

/// [`signed_edge_counts_from_paths`] for paths that are already regenerated (e.g. by [`decode`]): each item is
/// an ENTRY→EXIT DAG path, validated with [`check_path`], and its signed count.
pub fn signed_edge_counts_from_dag_paths<'a, I>(
    cfg: &Cfg,
    dag: &PathDag,
    paths: I,
) -> Result<SignedDerivedCounts, DecodeError>
where
    I: IntoIterator<Item = (&'a [DagEdgeId], i128)>,
{
    let mut acc = Accumulator::new(cfg, dag)?;
    for (path, count) in paths {
        check_path(dag, path)?;
        acc.add(dag, path, count)?;
    }
    acc.finish(cfg)
}

/// Derives per-edge and per-block counts from non-negative path counts `(path number, count)`: the unsigned
/// view of [`signed_edge_counts_from_paths`] (same computation, same errors; a sum above `i128::MAX`, which
/// needs more than 2^63 path entries, is [`DecodeError::Overflow`]).
pub fn edge_counts_from_paths(
    cfg: &Cfg,
    dag: &PathDag,
    numbering: &Numbering,
    paths: impl IntoIterator<Item = (u128, u64)>,
) -> Result<DerivedCounts, DecodeError> {
    let signed = signed_edge_counts_from_paths(cfg, dag, numbering, paths)?;
    let unsigned = |v: i128| u128::try_from(v).map_err(|_| DecodeError::Overflow);
    Ok(DerivedCounts {
        edges: signed.edges.into_iter().map(unsigned).collect::<Result<_, _>>()?,
        blocks: signed.blocks.into_iter().map(unsigned).collect::<Result<_, _>>()?,
        invocations: unsigned(signed.invocations)?,
    })
}

/// Test fixture (shared with `arrivals`' tests): [`crate::fixtures::setjmp_cfg`], its DAG and numbering.
/// Three normal calls (path 0) and two longjmps from bb2 back into bb1 that then return through bb3: net
/// counts 0: 3, 1: 2, 2: 2, 3: −2.
#[cfg(test)]
pub(crate) fn setjmp_graph() -> (Cfg, PathDag, Numbering) {
    let cfg = crate::fixtures::setjmp_cfg();
    let adj = cfg.adjacency();
    let dag = PathDag::build(&cfg, &adj, &crate::dfs::depth_first(&cfg, &adj));
    let n = Numbering::compute(&dag).unwrap();
    (cfg, dag, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_counts_of_a_setjmp_reentry() {
        let (cfg, dag, n) = setjmp_graph();
        assert_eq!(n.num_paths(), 4);
        let counts = [(0u128, 3i64), (1, 2), (2, 2), (3, -2)];
        let d = signed_edge_counts_from_paths(&cfg, &dag, &n, counts).unwrap();
        // e5, the setjmp block's Termination edge, nets the −2 re-entries; every other edge is exact.
        assert_eq!(d.edges, vec![5, 5, 2, 3, 5, -2, 2, 5]);
        assert_eq!(d.blocks, vec![5, 5, 5, 5, 5]);
        assert_eq!(d.invocations, 5);
        // The same from regenerated paths.
        let paths: Vec<(Vec<DagEdgeId>, i128)> =
            counts.iter().map(|&(r, c)| (decode(&dag, &n, r).unwrap(), i128::from(c))).collect();
        let e = signed_edge_counts_from_dag_paths(&cfg, &dag, paths.iter().map(|(p, c)| (p.as_slice(), *c))).unwrap();
        assert_eq!(e, d);
        // Repeated numbers add up, zero counts are skipped, invalid DAG paths are refused.
        let split = [(0u128, 1i64), (0, 2), (1, 2), (2, 2), (3, -1), (3, -1), (1, 0)];
        assert_eq!(signed_edge_counts_from_paths(&cfg, &dag, &n, split).unwrap(), d);
        assert_eq!(
            signed_edge_counts_from_dag_paths(&cfg, &dag, [(&[][..], 1i128)]),
            Err(DecodeError::InvalidPath { position: 0 })
        );
        assert!(matches!(
            signed_edge_counts_from_paths(&cfg, &dag, &n, [(4u128, 1u64)]),
            Err(DecodeError::OutOfRange { r: 4, num_paths: 4 })
        ));
    }

    #[test]
    fn unsigned_counts_are_the_signed_computation() {
        let (cfg, dag, n) = setjmp_graph();
        let counts = [(0u128, 3u64), (1, 2), (2, 2)];
        let u = edge_counts_from_paths(&cfg, &dag, &n, counts).unwrap();
        let s = signed_edge_counts_from_paths(&cfg, &dag, &n, counts).unwrap();
        assert_eq!(u.edges, s.edges.iter().map(|&x| x as u128).collect::<Vec<_>>());
        assert_eq!(u.blocks, s.blocks.iter().map(|&x| x as u128).collect::<Vec<_>>());
        assert_eq!(u.invocations, 7);
        // Sums beyond i128 are an error, not a wrap.
        let huge = [(0u128, i128::MAX), (0, i128::MAX)];
        assert_eq!(signed_edge_counts_from_paths(&cfg, &dag, &n, huge), Err(DecodeError::Overflow));
    }
}
