//! Net counts of truncated paths from *arrival* counts: one counter update per call that may not return,
//! instead of a +1 before it and a −1 after it.
//!
//! A block B whose calls may leave the function abnormally (`exit`, `longjmp`, an exception through a plain
//! call) has a `Termination` edge B→EXIT, and the path "prefix p, then B→EXIT" (the *truncated* path T) counts
//! how often the program left through B. Counting it exactly would need +1 before the call and −1 once the call
//! has returned. Instead, the instrumented code only adds 1 to T's counter before the call: T's counter then
//! holds the *arrivals* at B with prefix p, and the returns are derived here.
//!
//! Why that is exact: with Ball–Larus numbering, the paths that share the prefix p up to B are exactly the
//! numbers `S..S + NumPaths(B)` with `S = T − Val(B→EXIT)`. Every execution that arrived at B with prefix p and
//! came back from the calls goes on along a real out-edge of B and ends exactly one path of that range other
//! than T (a return, a back or cut edge, or the arrival at a later abnormal block, whose own truncated path is
//! in the range too). So, with `net` the true executions of each path:
//!
//! ```text
//! arrivals(T) = net(T) + Σ net(P) over the paths P that pass B with prefix p and go on
//! ```
//!
//! Every path that goes on from B ends at a vertex with fewer paths to EXIT than B, so solving for the
//! truncated paths in increasing NumPaths(B) order sees every `net(P)` it needs already final. A path that
//! passes B without T having been counted at all (only in an inconsistent profile) makes `net(T)` negative,
//! which the reader reports. A `setjmp` block re-entered by `longjmp` continues without a new arrival, so its
//! truncated path nets the re-entries as a negative count, exactly as with the +1/−1 scheme.
//!
//! Fork re-entries ([`net_counts_with_reentries`]): a `fork()`ed child starts with zeroed counters and resumes
//! each activation that was in flight at the fork after its call, without an arrival: it goes on to end one of
//! the paths that share T's prefix, so T's net count comes out one lower per such resumption. The instrumented
//! code measures them — the call compares the process's fork generation before and after, and records a
//! re-entry of T on a change — so a truncated path's real abnormal departures are `net(T) + reentries(T)`, which
//! must not be negative; the resumption itself is a virtual edge EXIT→B ([`crate::reentry`]).

use super::dag::{DagEdgeId, DagEdgeKind, PathDag};
use super::numbering::Numbering;
use super::regenerate::{decode, DecodeError};
use crate::graph::{BlockId, Cfg, EdgeKind};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

/// Solves `net(T) = raw(T) − Σ net(P)` over the paths P that pass T, one path at a time in ascending rank
/// (ties by number), so that no reader has to hold every decoded path at once — the Melski–Reps netting of a
/// whole module's paths does not fit in memory otherwise. Shared with the Melski–Reps netting
/// (`melski_reps::arrivals`): only how passes and ranks are found differs.
///
/// `counted` gives `(rank, number, raw)` for every path that has a counter value (numbers distinct); a rank
/// orders solving: 0 for a completed path, and for a truncated path one above the rank of every path that
/// passes it. `solved(number, net)` is called once per path when its net count is final, in solving order, and
/// returns the truncated paths it passes as `(number, rank)`. A truncated path that no counter names but that
/// a path with a nonzero net count passes is solved too (with raw 0: only an inconsistent profile has one).
/// Errors: `overflow` if a sum leaves `i128`, or the first error of `solved`.
pub(crate) fn solve_nets<E>(
    counted: impl IntoIterator<Item = (u128, u128, i128)>,
    overflow: E,
    mut solved: impl FnMut(u128, i128) -> Result<Vec<(u128, u128)>, E>,
) -> Result<(), E> {
    let mut queue: BinaryHeap<Reverse<(u128, u128, i128)>> = counted.into_iter().map(Reverse).collect();
    let mut scheduled: HashSet<u128> = queue.iter().map(|Reverse((_, n, _))| *n).collect();
    let mut went_on: HashMap<u128, i128> = HashMap::new();
    while let Some(Reverse((_, n, raw))) = queue.pop() {
        let Some(net) = raw.checked_sub(went_on.remove(&n).unwrap_or(0)) else { return Err(overflow) };
        for (t, rank) in solved(n, net)? {
            if net == 0 {
                continue;
            }
            let slot = went_on.entry(t).or_insert(0);
            let Some(sum) = slot.checked_add(net) else { return Err(overflow) };
            *slot = sum;
            if scheduled.insert(t) {
                queue.push(Reverse((rank, t, 0)));
            }
        }
    }
    Ok(())
}

/// The rank of the truncated path of a block with `num_paths` paths to EXIT: a path that passes the block and
/// is truncated later is truncated at a block with fewer (innermost block first).
fn truncation_rank(num_paths: u128) -> u128 {
    num_paths.saturating_add(1)
}

/// The `Termination` DAG edge out of each vertex, if any; more than one out of a block is an error.
fn termination_edges(cfg: &Cfg, dag: &PathDag) -> Result<Vec<Option<DagEdgeId>>, DecodeError> {
    let mut term = vec![None; dag.num_vertices()];
    for d in dag.edge_ids() {
        let e = dag.edge(d);
        if let DagEdgeKind::Real(ce) = e.kind {
            if cfg.edges().get(ce.index()).ok_or(DecodeError::Mismatch)?.kind == EdgeKind::Termination {
                // The pass gives a block one Termination edge; a second is not its graph.
                let slot = term.get_mut(e.from.index()).ok_or(DecodeError::Mismatch)?;
                if slot.replace(d).is_some() {
                    return Err(DecodeError::Mismatch);
                }
            }
        }
    }
    Ok(term)
}

/// A truncated path that a path passes: "its edges up to block B, then B→EXIT".
struct Pass {
    number: u128,
    block: BlockId,
}

/// How one path meets the blocks that may be left abnormally.
struct Truncations {
    /// At each block B it executes that has a `Termination` edge it does not take, in path order.
    passes: Vec<Pass>,
    /// The block whose `Termination` edge ends the path, if one does.
    ends_at: Option<BlockId>,
}

fn passed_truncations(
    dag: &PathDag,
    numbering: &Numbering,
    term: &[Option<DagEdgeId>],
    path: &[DagEdgeId],
) -> Result<Truncations, DecodeError> {
    let mut passes = Vec::new();
    let mut prefix: u128 = 0;
    let mut ends_at = None;
    for &d in path {
        let e = dag.edge(d);
        // A path that starts after a back or cut edge leaves ENTRY without executing the entry block.
        if let (Some(t), false) = (term.get(e.from.index()).copied().flatten(), e.kind.starts_segment()) {
            if t == d {
                ends_at = Some(e.from);
            } else {
                let number = prefix.checked_add(numbering.val(t)).ok_or(DecodeError::Overflow)?;
                passes.push(Pass { number, block: e.from });
            }
        }
        prefix = prefix.checked_add(numbering.val(d)).ok_or(DecodeError::Overflow)?;
    }
    Ok(Truncations { passes, ends_at })
}

/// A regenerated path and the truncated paths it passes, as (number, rank).
type PathWithPasses = (Vec<DagEdgeId>, Vec<(u128, u128)>);

/// A path of the netted profile, decoded once (the reader needs the path and netting needs it anyway).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetDagPath {
    /// The regenerated path.
    pub path: Vec<DagEdgeId>,
    /// Its net count: executions that really took it (negative only in an inconsistent profile, for a
    /// `setjmp` block's re-entries, or for a truncated path with fork re-entries).
    pub count: i128,
    /// A truncated path's measured fork re-entries (0 for every other path): `count + fork_reentries` is how
    /// often the program really left its block abnormally with its prefix.
    pub fork_reentries: i128,
}

/// Turns the counters of a path-mode function whose truncated paths count arrivals (see the module docs) into
/// net path counts: `(path number, counter value)` in (numbers may repeat and add up), every path with a
/// nonzero net count out, with its regenerated path. Fails like [`decode`] on a number the numbering does not
/// have, and with [`DecodeError::Overflow`] if a sum leaves `i128`. The cost is one regeneration per counted
/// path; a truncated path that only its continuations name is built from their prefix.
pub fn net_counts_from_arrivals<I, C>(
    cfg: &Cfg,
    dag: &PathDag,
    numbering: &Numbering,
    counts: I,
) -> Result<BTreeMap<u128, NetDagPath>, DecodeError>
where
    I: IntoIterator<Item = (u128, C)>,
    C: Into<i128>,
{
    net_counts_with_reentries(cfg, dag, numbering, counts, std::iter::empty::<(u128, u64)>())
}

/// [`net_counts_from_arrivals`] with measured fork re-entries `(truncated path number, count)` (see the module
/// docs): each lands in its path's `fork_reentries` (numbers may repeat and add up); a truncated path that only
/// re-entries name comes out with net count 0. Fails with [`DecodeError::NotTruncated`] on a re-entry of a path
/// that does not end with a `Termination` edge, and like [`decode`] on a number the numbering does not have.
pub fn net_counts_with_reentries<I, C, R, K>(
    cfg: &Cfg,
    dag: &PathDag,
    numbering: &Numbering,
    counts: I,
    reentries: R,
) -> Result<BTreeMap<u128, NetDagPath>, DecodeError>
where
    I: IntoIterator<Item = (u128, C)>,
    C: Into<i128>,
    R: IntoIterator<Item = (u128, K)>,
    K: Into<i128>,
{
    let term = termination_edges(cfg, dag)?;
    let mut raw: BTreeMap<u128, i128> = BTreeMap::new();
    for (r, c) in counts {
        let slot = raw.entry(r).or_insert(0);
        *slot = slot.checked_add(c.into()).ok_or(DecodeError::Overflow)?;
    }
    raw.retain(|_, c| *c != 0);
    // A decoded path with the truncations it passes, as (number, rank), and the block it is truncated at.
    let expand = |path: Vec<DagEdgeId>| -> Result<(PathWithPasses, Option<BlockId>), DecodeError> {
        let Truncations { passes, ends_at } = passed_truncations(dag, numbering, &term, &path)?;
        let passes = passes.iter().map(|p| (p.number, truncation_rank(numbering.num_paths_from(p.block)))).collect();
        Ok(((path, passes), ends_at))
    };
    let mut paths: BTreeMap<u128, PathWithPasses> = BTreeMap::new();
    let mut counted = Vec::with_capacity(raw.len());
    for (&r, &count) in &raw {
        let ((path, passes), ends_at) = expand(decode(dag, numbering, r)?)?;
        counted.push((ends_at.map_or(0, |b| truncation_rank(numbering.num_paths_from(b))), r, count));
        paths.insert(r, (path, passes));
    }
    // Completed paths first (their counts are final), then truncated ones, innermost block first. A truncated
    // path this one passes but that was never counted (only in an inconsistent profile) is decoded when its
    // turn comes: its passes are those of the paths that pass it, before it (the same prefix).
    let mut out: BTreeMap<u128, NetDagPath> = BTreeMap::new();
    solve_nets(counted, DecodeError::Overflow, |r, count| {
        let (path, passes) = match paths.remove(&r) {
            Some(known) => known,
            None => expand(decode(dag, numbering, r)?)?.0,
        };
        if count != 0 {
            out.insert(r, NetDagPath { path, count, fork_reentries: 0 });
        } else {
            paths.insert(r, (path, Vec::new()));
        }
        Ok(passes)
    })?;
    for (t, k) in reentries {
        let k: i128 = k.into();
        if k == 0 {
            continue;
        }
        let slot = match out.entry(t) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let path = match paths.remove(&t) {
                    Some((p, _)) => p,
                    None => decode(dag, numbering, t)?,
                };
                v.insert(NetDagPath { path, count: 0, fork_reentries: 0 })
            }
        };
        if slot.fork_reentries == 0 && truncation_block(cfg, dag, &slot.path).is_none() {
            return Err(DecodeError::NotTruncated { r: t });
        }
        slot.fork_reentries = slot.fork_reentries.checked_add(k).ok_or(DecodeError::Overflow)?;
    }
    out.retain(|_, p| p.count != 0 || p.fork_reentries != 0);
    Ok(out)
}

/// The block a truncated path leaves abnormally: the source of its final `Termination` edge.
pub fn truncation_block(cfg: &Cfg, dag: &PathDag, path: &[DagEdgeId]) -> Option<BlockId> {
    let last = dag.edge(*path.last()?);
    match last.kind {
        DagEdgeKind::Real(e) if cfg.edges().get(e.index())?.kind == EdgeKind::Termination => Some(last.from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ball_larus::counts::setjmp_graph;

    /// The net counts of [`net_counts_from_arrivals`], after checking that each path is its number's.
    fn net_counts<C: Into<i128>>(
        cfg: &Cfg,
        dag: &PathDag,
        n: &Numbering,
        counts: impl IntoIterator<Item = (u128, C)>,
    ) -> Result<BTreeMap<u128, i128>, DecodeError> {
        let net = net_counts_from_arrivals(cfg, dag, n, counts)?;
        for (&r, p) in &net {
            assert_eq!(decode(dag, n, r).unwrap(), p.path, "path {r}");
        }
        Ok(net.into_iter().map(|(r, p)| (r, p.count)).collect())
    }

    /// Three normal calls (each arrives at bb1 and bb2 and returns by path 0) and two longjmps from bb2 back
    /// into bb1's setjmp that then return through bb3 (path 2): arrivals 5 at both truncated paths. Net: the
    /// +1/−1 scheme's counts, 3, 2, 2 and −2 (the re-entries).
    #[test]
    fn setjmp_reentries_net_as_with_retractions() {
        let (cfg, dag, n) = setjmp_graph();
        let net = net_counts(&cfg, &dag, &n, [(0u128, 3i64), (1, 5), (2, 2), (3, 5)]).unwrap();
        assert_eq!(net, BTreeMap::from([(0, 3), (1, 2), (2, 2), (3, -2)]));
    }

    /// One call that forks in bb2's call: the parent and the child both return through bb3 (path 0); the child
    /// resumed bb2 without arriving there and recorded one re-entry of its truncated path 1. Merged: arrivals
    /// 1 at paths 1 and 3, path 0 twice. Path 1 nets to 1 − 2 = −1, which its re-entry makes up for (nobody left
    /// bb2 abnormally); path 3 nets to 1 − (2 − 1) = 0. The child's profile alone: path 0 once, the re-entry,
    /// nothing else — the same −1 for path 1, and path 3 nets to 0 − (1 − 1) = 0.
    #[test]
    fn fork_reentries_make_up_for_the_resumed_prefix() {
        let (cfg, dag, n) = setjmp_graph();
        for (counts, want) in [
            (vec![(0u128, 2i64), (1, 1), (3, 1)], BTreeMap::from([(0, (2, 0)), (1, (-1, 1))])),
            (vec![(0, 1)], BTreeMap::from([(0, (1, 0)), (1, (-1, 1))])),
        ] {
            let net = net_counts_with_reentries(&cfg, &dag, &n, counts, [(1u128, 1u64)]).unwrap();
            let got: BTreeMap<u128, (i128, i128)> =
                net.iter().map(|(&r, p)| (r, (p.count, p.fork_reentries))).collect();
            assert_eq!(got, want);
            assert_eq!(truncation_block(&cfg, &dag, &net[&1].path), Some(BlockId(2)));
            assert_eq!(truncation_block(&cfg, &dag, &net[&0].path), None);
        }
        // The parent's profile alone is an ordinary one.
        let net = net_counts_with_reentries(&cfg, &dag, &n, [(0u128, 1i64), (1, 1), (3, 1)], [(0u128, 0u64)]).unwrap();
        assert_eq!(net.iter().map(|(&r, p)| (r, p.count)).collect::<Vec<_>>(), vec![(0, 1)]);
        // A re-entry that only the re-entry names: the child left bb2 abnormally after resuming it.
        let net = net_counts_with_reentries(&cfg, &dag, &n, Vec::<(u128, i64)>::new(), [(1u128, 1u64)]).unwrap();
        assert_eq!(net.iter().map(|(&r, p)| (r, p.count, p.fork_reentries)).collect::<Vec<_>>(), vec![(1, 0, 1)]);
        // Only truncated paths can be re-entered.
        assert_eq!(
            net_counts_with_reentries(&cfg, &dag, &n, [(0u128, 1i64)], [(0u128, 1u64)]),
            Err(DecodeError::NotTruncated { r: 0 })
        );
        assert_eq!(
            net_counts_with_reentries(&cfg, &dag, &n, [(0u128, 1i64)], [(9u128, 1u64)]),
            Err(DecodeError::OutOfRange { r: 9, num_paths: 4 })
        );
    }

    /// Repeated numbers add up; exits through bb2 only; a path whose truncated prefix path was never counted
    /// (inconsistent) makes that one negative; bad numbers are errors.
    #[test]
    fn sums_missing_arrivals_and_errors() {
        let (cfg, dag, n) = setjmp_graph();
        // Four arrivals at bb1 and bb2 (two counted in two entries), one return: three exits from bb2.
        let net = net_counts(&cfg, &dag, &n, [(0u128, 1u64), (1, 2), (1, 2), (3, 4)]).unwrap();
        assert_eq!(net, BTreeMap::from([(0, 1), (1, 3)]));
        // Path 2 ran but nothing arrived at bb1 (truncated path 3).
        let net = net_counts(&cfg, &dag, &n, [(2u128, 1u64)]).unwrap();
        assert_eq!(net, BTreeMap::from([(2, 1), (3, -1)]));
        assert_eq!(net_counts(&cfg, &dag, &n, [(4u128, 1u64)]), Err(DecodeError::OutOfRange { r: 4, num_paths: 4 }));
        assert_eq!(net_counts(&cfg, &dag, &n, [(0u128, i128::MAX), (0, 1)]), Err(DecodeError::Overflow));
    }
}
