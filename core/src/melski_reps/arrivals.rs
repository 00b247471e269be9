//! Net counts of interprocedural truncated paths from *arrival* counts: one counter update per call that may
//! not return, instead of a +1 before it and a −1 after it (the path-mode scheme of [`crate::ball_larus::arrivals`],
//! carried over to the observable paths of G*_fn).
//!
//! A block B with a `Termination` arc (its calls may leave the frame: `exit`, `longjmp`, an exception) has a
//! *truncated* path for every way of reaching it: "the path so far, then B→GExit_P". The instrumented code adds
//! 1 to that path's counter, `count[pathNum + ρ_t(NVC)]`, on every arrival at B (before the first such call),
//! and never takes it back; this module derives how many of those arrivals really ended there.
//!
//! Why that is exact: the path running on arrival at B is the prefix of the truncated path. If B's calls come
//! back, that same path goes on — along B's out-edges, into a callee (the call arc hands `pathNum` over),
//! through a summary edge (a recursive or cut callee keeps it pending in the caller and resumes it), back to a
//! caller, or, in piecewise mode, up through an unbalanced return — until it is recorded: at a back edge, at
//! the return of its outermost activation, or as the truncated path of a later arrival. That recorded path
//! passes B, in its active part, with exactly the prefix of the truncated path. If the program does not come
//! back, no such path is recorded. So, with `net` the true executions of each path,
//!
//! ```text
//! arrivals(T) = net(T) + Σ net(P) over the paths P that pass B with T's prefix and go on
//! ```
//!
//! and a path P that passes B and is itself truncated is truncated at a later step, so solving the truncated
//! paths by decreasing step index (completed paths first) sees every `net(P)` already final.
//!
//! Which blocks count arrivals ([`counted_termination`]): every block with a `Termination` arc except the call
//! block of an interprocedural call site, whose only call that may leave is that call (the pass splits the
//! block before it otherwise): there the callee's path, which carries the caller's prefix, is counted where it
//! actually ends. Steps of a context path's context-prefix ran in an earlier path, so they are not passes.
//! A path that passes a truncation which was never counted (only in an inconsistent profile) gives that
//! truncated path a negative net count, which readers report.
//!
//! Fork re-entries ([`net_counts_with_reentries`]): a `fork()`ed child starts with zeroed counters and resumes
//! the activations that were in flight after their calls. The innermost one goes on along the path that was
//! running — through returns into its callers — without an arrival, so that path's truncated path T nets one
//! lower per resumption, exactly as in path mode ([`crate::ball_larus::arrivals`]). The instrumented code records a
//! re-entry of T when the fork generation changed across a call of a counted block, so `net(T) + reentries(T)`
//! is how often the program really left with T's prefix. (Callers waiting in interprocedural call blocks are on
//! the same path; they record re-entries of their call blocks instead, see [`super::counts`].)

use super::callgraph::SiteRole;
use super::numbering::{ArcKind, Numbering, OutArc};
use super::path::{InterprocPath, PathEnd, Step};
use super::program::ProcId;
use super::regenerate::{decode_visiting, walk_tails, PathError, DEFAULT_MAX_STEPS};
use crate::ball_larus::arrivals::solve_nets;
use crate::graph::BlockId;
use std::collections::BTreeMap;

/// Why arrival counts could not be netted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArrivalError {
    /// A counted path number could not be decoded.
    #[error("path {number}: {error}")]
    Path {
        /// The path number.
        number: u128,
        /// Why.
        error: PathError,
    },
    /// A block has more than one `Termination` arc: its arrivals would not say which one was left by.
    #[error("{proc}:{block} has more than one termination edge")]
    SeveralTerminations {
        /// The procedure.
        proc: ProcId,
        /// The block.
        block: BlockId,
    },
    /// A net count does not fit in an `i128`.
    #[error("a net path count overflows")]
    Overflow,
    /// A fork re-entry names a path that does not end at the counted termination of its last block (only such
    /// truncated paths are counted before a call that may be in flight at a fork).
    #[error("fork re-entry of path {number}, which is not a counted truncated path")]
    NotTruncated {
        /// The path number.
        number: u128,
    },
}

/// The `Termination` arc out of block `b` of `p` whose arrivals the instrumented program counts: the first
/// one, and none at the call block of an interprocedural site (the callee counts where the path ends). Shared
/// by the pass (where to count) and the readers (what to net).
pub fn counted_termination(num: &Numbering<'_>, p: ProcId, b: BlockId) -> Option<OutArc> {
    let sg = num.supergraph();
    if let Some(site) = sg.program().site_at(p, b) {
        if sg.calls().role(site) == SiteRole::Interprocedural {
            return None;
        }
    }
    num.arcs(p, b).iter().find(|a| matches!(a.kind, ArcKind::Termination { .. })).copied()
}

/// A path of the netted profile: decoded once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetPath {
    /// The decoded path.
    pub path: InterprocPath,
    /// Its net count: executions that really took it (negative only in an inconsistent profile, or for a
    /// truncated path with fork re-entries).
    pub count: i128,
    /// A truncated path's measured fork re-entries (0 for other paths): `count + fork_reentries` is how often
    /// the program really left with its prefix.
    pub fork_reentries: i128,
}

/// Decodes `n` and lists the truncations it passes (its own end excluded) as (number, step index), in path
/// order.
fn decode_with_passes(num: &Numbering<'_>, n: u128) -> Result<(InterprocPath, Vec<(u128, usize)>), ArrivalError> {
    let mut candidates: Vec<(u128, usize, OutArc)> = Vec::new();
    let path = decode_visiting(num, n, DEFAULT_MAX_STEPS, |at| {
        if let Some(arc) = counted_termination(num, at.at.proc, at.at.block) {
            let t =
                arc.rho.checked_apply(at.nvc).and_then(|v| v.checked_add(at.path_num)).ok_or(PathError::Overflow)?;
            candidates.push((t, at.step, arc));
        }
        Ok(())
    })
    .map_err(|error| ArrivalError::Path { number: n, error })?;
    let active_from = path.context_prefix_len();
    let last = path.steps.len().saturating_sub(1);
    let ends_here = |step: usize, arc: &OutArc| {
        step == last
            && matches!((path.end, arc.kind), (PathEnd::Termination { proc, edge }, ArcKind::Termination { edge: e })
                if proc == path.steps[step].proc && edge == e)
    };
    let passes = candidates
        .iter()
        .filter(|(_, s, arc)| *s >= active_from && !ends_here(*s, arc))
        .map(|&(t, s, _)| (t, s))
        .collect();
    Ok((path, passes))
}

/// When a path's net count can be solved: completed paths first, then truncated ones from the latest
/// truncation step to the earliest (a path that passes a truncation and is truncated itself is so later).
fn rank(truncated_at: Option<usize>) -> u128 {
    truncated_at.map_or(0, |step| (usize::MAX - step) as u128 + 1)
}

/// `(rank, number, raw)` of every path of `paths` (number, raw), in order. Ranking walks every counted path,
/// most of them truncated paths that net to 0 and are never decoded again, so it is most of the netting's
/// time: above a few thousand paths they are ranked on every core.
fn ranked(num: &Numbering<'_>, paths: &[(u128, i128)]) -> Result<Vec<(u128, u128, i128)>, ArrivalError> {
    let threads = if paths.len() < 4096 { 1 } else { std::thread::available_parallelism().map_or(1, |n| n.get()) };
    ranked_on(num, paths, threads)
}

/// [`ranked`] on `threads` threads.
pub(super) fn ranked_on(
    num: &Numbering<'_>,
    paths: &[(u128, i128)],
    threads: usize,
) -> Result<Vec<(u128, u128, i128)>, ArrivalError> {
    // Each part's paths are walked keeping no steps, resuming from the prefix they share with the one before.
    let rank_all = |part: &[(u128, i128)]| -> Result<Vec<(u128, u128, i128)>, ArrivalError> {
        let numbers: Vec<u128> = part.iter().map(|&(n, _)| n).collect();
        let mut out = Vec::with_capacity(part.len());
        walk_tails(num, &numbers, DEFAULT_MAX_STEPS, |i, (end, last)| {
            let truncated_at = last.filter(|&(_, s)| ends_at_counted(num, end, Some(s))).map(|(step, _)| step);
            out.push((rank(truncated_at), part[i].0, part[i].1));
        })
        .map_err(|(number, error)| ArrivalError::Path { number, error })?;
        Ok(out)
    };
    if threads <= 1 || paths.len() < 2 {
        return rank_all(paths);
    }
    let chunk = paths.len().div_ceil(threads);
    let parts: Vec<Result<Vec<_>, ArrivalError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = paths.chunks(chunk).map(|part| scope.spawn(move || rank_all(part))).collect();
        // A walk never panics (every failure is an error value); a panic would be a bug, reported as one.
        handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let mut out = Vec::with_capacity(paths.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// The net count of every path from a profile whose truncated paths count arrivals (`raw`: path number →
/// counter value, as summed from the counters). Paths whose net count is 0 are left out; a truncated path that
/// only its continuations name (never counted itself) is included with its (negative) net count.
///
/// Errors: a path number that does not decode, a block with several termination arcs, an overflow. Never
/// panics.
pub fn net_counts_from_arrivals(
    num: &Numbering<'_>,
    raw: &BTreeMap<u128, i128>,
) -> Result<BTreeMap<u128, NetPath>, ArrivalError> {
    net_counts_with_reentries(num, raw, &BTreeMap::new())
}

/// [`net_counts_from_arrivals`] with measured fork re-entries (truncated path number → count, see the module
/// docs), which land in each path's `fork_reentries`; a truncated path that only re-entries name comes out with
/// net count 0. Also fails with [`ArrivalError::NotTruncated`] on a re-entry of a path that does not end at the
/// counted termination of its last block.
pub fn net_counts_with_reentries(
    num: &Numbering<'_>,
    raw: &BTreeMap<u128, i128>,
    reentries: &BTreeMap<u128, i128>,
) -> Result<BTreeMap<u128, NetPath>, ArrivalError> {
    let mut out = BTreeMap::new();
    net_counts_streaming(num, raw, reentries, |n, path, count, fork_reentries| {
        out.insert(n, NetPath { path: path.clone(), count, fork_reentries });
    })?;
    Ok(out)
}

/// [`net_counts_with_reentries`] for a whole module's paths: `each(number, path, net count, fork re-entries)` is
/// called once per path of the result, in solving order (not by number), with the path decoded just for the
/// call. Memory stays proportional to the number of counted paths, not to their length (a test suite's
/// profile has millions of paths of hundreds of steps each). Each counted path is walked once to rank it, and
/// decoded once more only if its net count or its re-entries are not 0.
pub fn net_counts_streaming(
    num: &Numbering<'_>,
    raw: &BTreeMap<u128, i128>,
    reentries: &BTreeMap<u128, i128>,
    mut each: impl FnMut(u128, &InterprocPath, i128, i128),
) -> Result<(), ArrivalError> {
    let program = num.supergraph().program();
    for p in program.proc_ids() {
        for b in 0..program.cfg(p).num_blocks() {
            let b = BlockId(b as u32);
            if num.arcs(p, b).iter().filter(|a| matches!(a.kind, ArcKind::Termination { .. })).count() > 1 {
                return Err(ArrivalError::SeveralTerminations { proc: p, block: b });
            }
        }
    }
    // A truncated path that only re-entries name takes part with 0 arrivals.
    let reentered_only = reentries.iter().filter(|&(n, &k)| k != 0 && !raw.contains_key(n)).map(|(&n, _)| (n, 0));
    let paths: Vec<(u128, i128)> = raw.iter().map(|(&n, &c)| (n, c)).chain(reentered_only).collect();
    let counted = ranked(num, &paths)?;
    solve_nets(counted, ArrivalError::Overflow, |n, count| {
        let fork_reentries = reentries.get(&n).copied().unwrap_or(0);
        if count == 0 && fork_reentries == 0 {
            // Nothing of it is counted or passed on (most truncated paths: every arrival went on), so it need
            // not be decoded again.
            return Ok(Vec::new());
        }
        let (path, passes) = decode_with_passes(num, n)?;
        if fork_reentries != 0 && !ends_at_counted_termination(num, &path) {
            return Err(ArrivalError::NotTruncated { number: n });
        }
        if count != 0 || fork_reentries != 0 {
            each(n, &path, count, fork_reentries);
        }
        Ok(passes.into_iter().map(|(t, step)| (t, rank(Some(step)))).collect())
    })
}

/// Whether `path` ends through the counted termination arc of its last block (a path whose arrivals count).
pub fn ends_at_counted_termination(num: &Numbering<'_>, path: &InterprocPath) -> bool {
    ends_at_counted(num, path.end, path.steps.last().copied())
}

/// [`ends_at_counted_termination`] of a path by its end and last step.
fn ends_at_counted(num: &Numbering<'_>, end: PathEnd, last: Option<Step>) -> bool {
    let (PathEnd::Termination { proc, edge }, Some(last)) = (end, last) else { return false };
    proc == last.proc
        && matches!(counted_termination(num, proc, last.block).map(|a| a.kind),
            Some(ArcKind::Termination { edge: e }) if e == edge)
}
