//! Path numbers ↔ observable paths: Algorithms 5.1 and 6.1 over an explicit path (encoding) and Algorithm 5.2
//! with its piecewise extension (decoding).
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998:
//! - Algorithm 5.1 (§5.4) sums edgeValueInContext along an unbalanced-left path, keeping
//!   numValidCompsFromExit (NVC) on a stack: a call edge pushes NVC and sets NVC := ψ_r(NVC), a return edge pops
//!   it, an intraprocedural edge adds ρ_e(NVC), the first edge adds its Eq. 27 offset.
//! - Algorithm 6.1 (§6.2) adds cntOpenLfParens: a return edge taken with no open call adds edgeValue\[e\]
//!   (Eq. 35) and sets NVC := numUnbalRLPaths\[Exit_S\], S the procedure returned to. This is the erratum-corrected
//!   rule: the TR prints ψ_r(numUnbalRLPaths\[Exit_S\]), which contradicts the definition of NVC and its own
//!   Fig. 17 ("numValidCompsFromExit = 1; /* from vertex v16 */").
//! - Algorithm 5.2 (§5.6) walks from Entry_global taking, at each vertex, the valid successor whose range
//!   [edgeValueInContext, edgeValueInContext + numValidComps) contains the remaining number. The piecewise
//!   decoder, "left as an exercise", is the same walk with GEntry entries and the Eq. 35 choice at an Exit_P with
//!   no open call.
//!
//! Invariant: encoding and decoding run one state machine (`Walker`), so `decode(encode(p)) = p` for every
//! observable path and `encode(decode(n)) = n` for every `n < num_paths()`; every input is validated and every
//! failure is a [`PathError`], never a panic or an unbounded loop (decoding stops after a step limit, because a
//! single path can be exponentially long in the call-graph depth even when there are few paths).

use super::numbering::{ArcKind, EntryKind, ExitTarget, GlobalEntry, Mode, Numbering, OutArc};
use super::path::{InterprocPath, PathEnd, Step, Via};
use super::program::{CallSiteId, ProcId};
use crate::graph::{BlockId, EdgeId};

/// The step limit of [`decode`]; use [`decode_with_limit`] for longer paths.
pub const DEFAULT_MAX_STEPS: usize = 1 << 20;

/// The steps a decoded path has room for from the start.
const TYPICAL_STEPS: usize = 64;

/// Why a path number or a path could not be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The number is not below numValidComps(\[ε:Entry_global\]).
    #[error("path number {n} out of range (there are {num_paths} paths)")]
    OutOfRange {
        /// The number given.
        n: u128,
        /// The number of paths.
        num_paths: u128,
    },
    /// The given path is not an observable path of G*_fn; `position` is the first offending step (the number of
    /// steps for the end).
    #[error("not an observable path at step {position}")]
    InvalidPath {
        /// Index into `steps` (its length for `end`).
        position: usize,
    },
    /// Decoding exceeded the step limit.
    #[error("the path is longer than {limit} steps")]
    TooLong {
        /// The limit.
        limit: usize,
    },
    /// The decoder found no successor range containing the remainder (a numbering that does not match; a bug).
    #[error("decoding got stuck with remainder {remainder}")]
    Stuck {
        /// The remaining number.
        remainder: u128,
    },
    /// A value does not fit in a `u128` (only with a corrupted numbering).
    #[error("path number arithmetic overflows 128 bits")]
    Overflow,
}

/// Where the walk is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum At {
    Block(BlockId),
    /// GEntry_P (piecewise, right after Entry_global→GEntry_P).
    GEntry,
    /// Exit_P, reached through the `Return` edge `edge`.
    Exit(EdgeId),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Frame {
    site: CallSiteId,
    caller: ProcId,
    nvc: u128,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Choice {
    Arc(OutArc),
    Return(CallSiteId),
    Global,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Candidate {
    choice: Choice,
    /// edgeValueInContext of the choice.
    value: u128,
    /// numValidComps after taking it.
    count: u128,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Moved {
    Step(Step),
    AtExit(EdgeId),
    End(PathEnd),
}

/// The state of Algorithms 5.1/5.2/6.1 after a path prefix.
#[derive(Clone, Debug)]
struct Walker<'n, 'a> {
    num: &'n Numbering<'a>,
    proc: ProcId,
    at: At,
    /// numValidCompsFromExit.
    nvc: u128,
    /// The open calls of the path (NVCstack and returnStack of Algorithm 5.2).
    frames: Vec<Frame>,
    /// Whether the path entered its outermost activation through Entry_global→Entry_P and has not returned from
    /// it: "(_P" is open, so Exit_P's only valid successor is Exit_global (cntOpenLfParens ≥ 1 in Alg. 6.1).
    open_root: bool,
}

impl<'n, 'a> Walker<'n, 'a> {
    fn start(num: &'n Numbering<'a>, entry: &GlobalEntry) -> (Walker<'n, 'a>, Option<Step>) {
        match entry.kind {
            EntryKind::Root(p) => {
                let w = Walker { num, proc: p, at: At::Block(BlockId(0)), nvc: 1, frames: Vec::new(), open_root: true };
                (w, Some(Step { proc: p, block: BlockId(0), via: Via::RootEntry }))
            }
            EntryKind::Mid(p) => {
                let nvc = num.num_unbal_rl_paths(p);
                (Walker { num, proc: p, at: At::GEntry, nvc, frames: Vec::new(), open_root: false }, None)
            }
        }
    }

    fn choices(&self) -> Result<Vec<Candidate>, PathError> {
        let arcs = |list: &[OutArc]| {
            list.iter()
                .map(|a| {
                    let value = a.rho.checked_apply(self.nvc).ok_or(PathError::Overflow)?;
                    let count = a.completions.checked_apply(self.nvc).ok_or(PathError::Overflow)?;
                    Ok(Candidate { choice: Choice::Arc(*a), value, count })
                })
                .collect::<Result<Vec<_>, PathError>>()
        };
        match self.at {
            At::Block(b) => arcs(self.num.arcs(self.proc, b)),
            At::GEntry => arcs(self.num.gentry_arcs(self.proc)),
            At::Exit(_) => {
                if let Some(f) = self.frames.last() {
                    Ok(vec![Candidate { choice: Choice::Return(f.site), value: 0, count: self.nvc }])
                } else if self.open_root {
                    Ok(vec![Candidate { choice: Choice::Global, value: 0, count: self.nvc }])
                } else if self.num.mode() == Mode::Piecewise {
                    Ok(self
                        .num
                        .exit_successors(self.proc)
                        .iter()
                        .map(|s| Candidate {
                            choice: match s.target {
                                ExitTarget::Site(site) => Choice::Return(site),
                                ExitTarget::Global => Choice::Global,
                            },
                            value: s.value,
                            count: s.count,
                        })
                        .collect())
                } else {
                    Ok(Vec::new())
                }
            }
        }
    }

    /// The choice whose range `[value, value + count)` holds `rem`, the first of [`Walker::choices`] that does,
    /// with the same errors, but without building the list at a block: decoding makes this choice at every
    /// step of every path, and the list's allocation was most of the decoder's time.
    fn choice_containing(&self, rem: u128) -> Result<Option<Candidate>, PathError> {
        let arcs = match self.at {
            At::Block(b) => self.num.arcs(self.proc, b),
            At::GEntry => self.num.gentry_arcs(self.proc),
            At::Exit(_) => return Ok(self.choices()?.into_iter().find(|o| holds(o.value, o.count, rem))),
        };
        // Only the found arc is copied into a candidate (an arc is four 128-bit words).
        let mut found: Option<(usize, u128, u128)> = None;
        for (i, a) in arcs.iter().enumerate() {
            let value = a.rho.checked_apply(self.nvc).ok_or(PathError::Overflow)?;
            let count = a.completions.checked_apply(self.nvc).ok_or(PathError::Overflow)?;
            if found.is_none() && holds(value, count, rem) {
                found = Some((i, value, count));
            }
        }
        Ok(found.map(|(i, value, count)| Candidate { choice: Choice::Arc(arcs[i]), value, count }))
    }

    /// Takes `choice` (one of [`Walker::choices`]); `None` if it is not possible here.
    fn take(&mut self, choice: Choice) -> Option<Moved> {
        let p = self.proc;
        match (self.at, choice) {
            (At::Block(_) | At::GEntry, Choice::Arc(arc)) => Some(match arc.kind {
                ArcKind::Branch { edge, to } => {
                    self.at = At::Block(to);
                    Moved::Step(Step { proc: p, block: to, via: Via::Edge(edge) })
                }
                ArcKind::LoopRestart { back, to } => {
                    let via = if self.at == At::GEntry { Via::MidEntry { back } } else { Via::LoopRestart { back } };
                    self.at = At::Block(to);
                    Moved::Step(Step { proc: p, block: to, via })
                }
                ArcKind::Call { site, callee, .. } => {
                    let ret = self.num.supergraph().program().site(site)?.ret;
                    self.frames.push(Frame { site, caller: p, nvc: self.nvc });
                    self.nvc = self.num.psi(p, ret).checked_apply(self.nvc)?;
                    self.proc = callee;
                    self.at = At::Block(BlockId(0));
                    Moved::Step(Step { proc: callee, block: BlockId(0), via: Via::Call { site } })
                }
                ArcKind::Summary { site, ret } => {
                    self.at = At::Block(ret);
                    Moved::Step(Step { proc: p, block: ret, via: Via::Summary { site } })
                }
                ArcKind::Return { edge } => {
                    self.at = At::Exit(edge);
                    Moved::AtExit(edge)
                }
                ArcKind::Termination { edge } => Moved::End(PathEnd::Termination { proc: p, edge }),
                ArcKind::BackEdgeExit { back } => Moved::End(PathEnd::BackEdge { proc: p, back }),
            }),
            (At::Exit(edge), Choice::Return(site)) => {
                let info = *self.num.supergraph().program().site(site)?;
                match self.frames.last() {
                    Some(f) if f.site == site => {
                        self.nvc = f.nvc;
                        self.frames.pop();
                    }
                    Some(_) => return None,
                    None if self.open_root || self.num.mode() != Mode::Piecewise => return None,
                    // Unbalanced-right return (Alg. 6.1 with the corrected rule): completions from Exit_S.
                    None => self.nvc = self.num.num_unbal_rl_paths(info.proc),
                }
                self.proc = info.proc;
                self.at = At::Block(info.ret);
                Some(Moved::Step(Step { proc: info.proc, block: info.ret, via: Via::Return { site, edge } }))
            }
            (At::Exit(edge), Choice::Global) => Some(Moved::End(PathEnd::RootReturn { proc: p, edge })),
            _ => None,
        }
    }
}

/// Whether the range of path numbers a choice leads to, `[value, value + count)`, holds `rem`.
fn holds(value: u128, count: u128, rem: u128) -> bool {
    value <= rem && rem - value < count
}

/// The path number of `path` (Algorithm 5.1 for context paths, 6.1 for piecewise ones), validating that it is
/// an observable path of `num`'s G*_fn.
pub fn encode(num: &Numbering<'_>, path: &InterprocPath) -> Result<u128, PathError> {
    let invalid = |position| PathError::InvalidPath { position };
    let first = path.steps.first().ok_or(invalid(0))?;
    let entry = match first.via {
        Via::RootEntry => num.root_entry(first.proc),
        Via::MidEntry { .. } => num.mid_entry(first.proc),
        _ => None,
    }
    .ok_or(invalid(0))?;
    let (mut w, step0) = Walker::start(num, entry);
    let mut total = entry.offset;
    let mut position = 0;
    if let Some(s) = step0 {
        if s != *first {
            return Err(invalid(0));
        }
        position = 1;
    }
    // Each iteration consumes one G*_fn choice; a step or the end is matched after at most two.
    loop {
        let target = path.steps.get(position);
        let mut matched = None;
        for opt in w.choices()? {
            if opt.count == 0 {
                continue;
            }
            let mut next = w.clone();
            let moved = next.take(opt.choice);
            let consistent = match (moved, target) {
                (Some(Moved::Step(s)), Some(t)) => s == *t,
                (Some(Moved::AtExit(edge)), Some(t)) => matches!(t.via, Via::Return { edge: e, .. } if e == edge),
                (Some(Moved::AtExit(edge)), None) => {
                    matches!(path.end, PathEnd::RootReturn { edge: e, .. } if e == edge)
                }
                (Some(Moved::End(end)), None) => end == path.end,
                _ => false,
            };
            if let (true, Some(moved)) = (consistent, moved) {
                matched = Some((opt.value, next, moved));
                break;
            }
        }
        let (value, next, moved) = matched.ok_or(invalid(position))?;
        total = total.checked_add(value).ok_or(PathError::Overflow)?;
        w = next;
        match moved {
            Moved::Step(_) => position += 1,
            Moved::AtExit(_) => {}
            Moved::End(_) => return Ok(total),
        }
    }
}

/// The observable path with number `n` (Algorithm 5.2, or its piecewise extension), at most
/// [`DEFAULT_MAX_STEPS`] steps long.
pub fn decode(num: &Numbering<'_>, n: u128) -> Result<InterprocPath, PathError> {
    decode_with_limit(num, n, DEFAULT_MAX_STEPS)
}

/// [`decode`] with an explicit step limit ([`PathError::TooLong`] beyond it).
pub fn decode_with_limit(num: &Numbering<'_>, n: u128, limit: usize) -> Result<InterprocPath, PathError> {
    decode_visiting(num, n, limit, |_| Ok(()))
}

/// Where a decoding walk stands when it reaches a block: what the instrumented program holds there.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WalkState {
    /// The index of the step just taken (the block visit) in the path's `steps`.
    pub step: usize,
    /// The block visit.
    pub at: Step,
    /// `pathNum` on arrival at the block: the Entry_global offset plus the values of the edges taken so far.
    pub path_num: u128,
    /// numValidCompsFromExit of the activation at the block.
    pub nvc: u128,
}

/// [`decode_with_limit`], calling `visit` with the walk's state at every block visit in order — the one
/// decoding walk, for readers that need the running `pathNum` (such as netting arrival counts).
pub fn decode_visiting(
    num: &Numbering<'_>,
    n: u128,
    limit: usize,
    mut visit: impl FnMut(WalkState) -> Result<(), PathError>,
) -> Result<InterprocPath, PathError> {
    // Whole-program paths run to hundreds of steps: start with room for a typical one rather than growing
    // from empty (the regrowth was a sixth of decoding), and give back what is left over at the end.
    let mut steps: Vec<Step> = Vec::with_capacity(TYPICAL_STEPS);
    let end = walk(num, n, limit, |state| {
        visit(state)?;
        steps.push(state.at);
        Ok(())
    })?;
    steps.shrink_to_fit();
    Ok(InterprocPath { steps, end })
}

/// The Entry_global successor whose range of numbers holds `n`.
fn entry_holding<'n>(num: &'n Numbering<'_>, n: u128) -> Result<&'n GlobalEntry, PathError> {
    let num_paths = num.num_paths();
    if n >= num_paths {
        return Err(PathError::OutOfRange { n, num_paths });
    }
    // The entries' ranges are consecutive, by ascending offset: the one holding n is the last that starts at
    // or below it (a binary search; a whole program has hundreds of entries).
    let entries = num.entries();
    entries
        .partition_point(|e| e.offset <= n)
        .checked_sub(1)
        .and_then(|i| entries.get(i))
        .filter(|e| n - e.offset < e.count)
        .ok_or(PathError::Stuck { remainder: n })
}

/// The decoding walk of path `n` without keeping its steps: `visit` sees every block visit in order (as in
/// [`decode_visiting`]), and the path's end is returned. For readers that only need a property of each path
/// (its length, where it ends) over millions of paths.
pub fn walk(
    num: &Numbering<'_>,
    n: u128,
    limit: usize,
    mut visit: impl FnMut(WalkState) -> Result<(), PathError>,
) -> Result<PathEnd, PathError> {
    let entry = entry_holding(num, n)?;
    let mut rem = n - entry.offset;
    let (mut w, step0) = Walker::start(num, entry);
    let mut taken = 0usize;
    if let Some(s) = step0 {
        visit(WalkState { step: 0, at: s, path_num: n - rem, nvc: w.nvc })?;
        taken = 1;
    }
    loop {
        if taken > limit {
            return Err(PathError::TooLong { limit });
        }
        let opt = w.choice_containing(rem)?.ok_or(PathError::Stuck { remainder: rem })?;
        rem -= opt.value;
        match w.take(opt.choice).ok_or(PathError::Stuck { remainder: rem })? {
            Moved::Step(s) => {
                visit(WalkState { step: taken, at: s, path_num: n - rem, nvc: w.nvc })?;
                taken += 1;
            }
            Moved::AtExit(_) => {}
            Moved::End(end) => return if rem == 0 { Ok(end) } else { Err(PathError::Stuck { remainder: rem }) },
        }
    }
}

/// Where a path ends: its end and its last block visit (index and step), as [`walk`] finds them.
pub type PathTail = (PathEnd, Option<(usize, Step)>);

/// A walk's state after one of its choices, and the path numbers `[lo, hi)` whose walks all pass through it.
struct Checkpoint<'n, 'a> {
    walker: Walker<'n, 'a>,
    lo: u128,
    hi: u128,
    taken: usize,
    last: Option<(usize, Step)>,
}

/// [`walk`] of many paths, for readers that only need where each ends ([`PathTail`]). Every path that shares a
/// prefix with another has its number in the range of that prefix (decoding picks the successor whose range
/// holds the remaining number), so a walk resumes from the deepest choice the previous path's walk made whose
/// range holds the next number: over numbers in ascending order, each choice of the paths' prefix tree is made
/// once, not once per path through it. Any order gives the same results. `each(i, tail)` is called for
/// `numbers[i]` in order; the first error stops the walk.
pub fn walk_tails(
    num: &Numbering<'_>,
    numbers: &[u128],
    limit: usize,
    mut each: impl FnMut(usize, PathTail),
) -> Result<(), (u128, PathError)> {
    let mut stack: Vec<Checkpoint<'_, '_>> = Vec::new();
    for (i, &n) in numbers.iter().enumerate() {
        let fail = |e: PathError| (n, e);
        while stack.last().is_some_and(|c| !(c.lo <= n && n < c.hi)) {
            stack.pop();
        }
        if stack.is_empty() {
            let entry = entry_holding(num, n).map_err(fail)?;
            let (walker, step0) = Walker::start(num, entry);
            let hi = entry.offset.saturating_add(entry.count);
            let (taken, last) = if let Some(s) = step0 { (1, Some((0, s))) } else { (0, None) };
            stack.push(Checkpoint { walker, lo: entry.offset, hi, taken, last });
        }
        loop {
            let Some(top) = stack.last() else { return Err(fail(PathError::Stuck { remainder: n })) };
            if top.taken > limit {
                return Err(fail(PathError::TooLong { limit }));
            }
            let rem = n - top.lo;
            let opt =
                top.walker.choice_containing(rem).map_err(fail)?.ok_or(fail(PathError::Stuck { remainder: rem }))?;
            let mut walker = top.walker.clone();
            let (mut taken, mut last) = (top.taken, top.last);
            let lo = top.lo + opt.value;
            let hi = lo.saturating_add(opt.count);
            match walker.take(opt.choice).ok_or(fail(PathError::Stuck { remainder: rem - opt.value }))? {
                Moved::Step(s) => {
                    last = Some((taken, s));
                    taken += 1;
                }
                Moved::AtExit(_) => {}
                Moved::End(end) => {
                    if n != lo {
                        return Err(fail(PathError::Stuck { remainder: n - lo }));
                    }
                    each(i, (end, last));
                    break;
                }
            }
            stack.push(Checkpoint { walker, lo, hi, taken, last });
        }
    }
    Ok(())
}
