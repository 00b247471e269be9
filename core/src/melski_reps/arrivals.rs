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
use super::path::{InterprocPath, PathEnd};
use super::program::ProcId;
use super::regenerate::{decode_visiting, PathError, DEFAULT_MAX_STEPS};
use crate::ball_larus::arrivals::{solve_nets, Netting};
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

/// One path while netting.
struct Entry {
    path: InterprocPath,
    /// The counter's value: arrivals for a truncated path, executions otherwise.
    raw: i128,
    /// The truncated paths this path passes, as (number, step index), by ascending step index.
    passes: Vec<(u128, usize)>,
    /// The step index of the block whose counted `Termination` arc ends this path, if one does.
    truncated_at: Option<usize>,
}

/// Decodes `n` and lists the truncations it passes (its own end excluded).
fn entry_of(num: &Numbering<'_>, n: u128, raw: i128) -> Result<Entry, ArrivalError> {
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
    let truncated_at = candidates.iter().find(|(_, s, arc)| ends_here(*s, arc)).map(|&(_, s, _)| s);
    let passes = candidates
        .iter()
        .filter(|(_, s, arc)| *s >= active_from && !ends_here(*s, arc))
        .map(|&(t, s, _)| (t, s))
        .collect();
    Ok(Entry { path, raw, passes, truncated_at })
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
    let program = num.supergraph().program();
    for p in program.proc_ids() {
        for b in 0..program.cfg(p).num_blocks() {
            let b = BlockId(b as u32);
            if num.arcs(p, b).iter().filter(|a| matches!(a.kind, ArcKind::Termination { .. })).count() > 1 {
                return Err(ArrivalError::SeveralTerminations { proc: p, block: b });
            }
        }
    }
    let mut entries: BTreeMap<u128, Entry> = BTreeMap::new();
    for (&n, &c) in raw {
        entries.insert(n, entry_of(num, n, c)?);
    }
    // Truncations passed but never counted: their prefix and passes come from the path that passes them.
    let mut implied: BTreeMap<u128, Entry> = BTreeMap::new();
    for e in entries.values() {
        for (j, &(t, step)) in e.passes.iter().enumerate() {
            if entries.contains_key(&t) || implied.contains_key(&t) {
                continue;
            }
            let at = e.path.steps[step];
            let Some(ArcKind::Termination { edge }) = counted_termination(num, at.proc, at.block).map(|a| a.kind)
            else {
                continue;
            };
            let path = InterprocPath {
                steps: e.path.steps[..=step].to_vec(),
                end: PathEnd::Termination { proc: at.proc, edge },
            };
            implied.insert(t, Entry { path, raw: 0, passes: e.passes[..j].to_vec(), truncated_at: Some(step) });
        }
    }
    entries.extend(implied);

    // Completed paths first, then truncated ones from the latest truncation step to the earliest.
    let netting: BTreeMap<u128, Netting> = entries
        .iter()
        .map(|(&n, e)| {
            let rank = e.truncated_at.map_or(0, |step| (usize::MAX - step) as u128 + 1);
            (n, Netting { raw: e.raw, passes: e.passes.iter().map(|p| p.0).collect(), rank })
        })
        .collect();
    let net = solve_nets(&netting).ok_or(ArrivalError::Overflow)?;
    let mut out: BTreeMap<u128, NetPath> = net
        .into_iter()
        .filter_map(|(n, count)| entries.remove(&n).map(|e| (n, NetPath { path: e.path, count, fork_reentries: 0 })))
        .collect();
    for (&t, &k) in reentries {
        if k == 0 {
            continue;
        }
        let slot = match out.entry(t) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let path = match entries.remove(&t) {
                    Some(e) => e.path,
                    None => decode_visiting(num, t, DEFAULT_MAX_STEPS, |_| Ok(()))
                        .map_err(|error| ArrivalError::Path { number: t, error })?,
                };
                v.insert(NetPath { path, count: 0, fork_reentries: 0 })
            }
        };
        if !ends_at_counted_termination(num, &slot.path) {
            return Err(ArrivalError::NotTruncated { number: t });
        }
        slot.fork_reentries = slot.fork_reentries.checked_add(k).ok_or(ArrivalError::Overflow)?;
    }
    Ok(out)
}

/// Whether `path` ends through the counted termination arc of its last block (a path whose arrivals count).
pub fn ends_at_counted_termination(num: &Numbering<'_>, path: &InterprocPath) -> bool {
    let (PathEnd::Termination { proc, edge }, Some(last)) = (path.end, path.steps.last()) else { return false };
    proc == last.proc
        && matches!(counted_termination(num, proc, last.block).map(|a| a.kind),
            Some(ArcKind::Termination { edge: e }) if e == edge)
}
