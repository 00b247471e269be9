//! Regeneration: rebuild the exact block sequence of every activation from the decisions in a trace.
//!
//! Thesis Figure 3.12 / TOPLAS'94 Figure 14, with the witness read lazily: at a predicate with no pending
//! witness read one; take the out-edge whose witness set holds it ([`super::tables`]); when the edge taken
//! writes a witness, that witness is consumed (it must be the pending one: otherwise the trace is corrupt).
//! A witness thus stays pending across vertices until its edge is crossed.
//!
//! # Calls (thesis §3.2.2, TOPLAS'94 §4.2)
//! The stream of one thread interleaves activations: at a block with k call sites, after the block, come k
//! groups "zero or more activations, then Done" — an activation is `Enter(f)` followed by f's own decisions up
//! to its return; zero activations is a call to an uninstrumented function, several are callbacks from one.
//! The top level of a thread is one such group (its Done ends the thread). The caller's state (block, pending
//! witness, call sites left) waits on a stack. Blocking guarantees that no witness is pending at a call, so
//! the decisions before and after a callee's trace are the caller's own; a decision read while one is pending
//! there is an error, never a wrong answer. The decoder always knows what comes next (a witness of the current
//! function, or an activation), which is what lets the bit-level encodings drop all token tags.
//!
//! # Resync (`longjmp`)
//! A `longjmp` leaves activations without their returns: it is a call, so the trace is at a call site, where an
//! activation is read. When the program has a resync id ([`Program::with_resync`]), an activation of that id is a
//! [`Resync`] marker, written where a `setjmp` call returns the second time: the activations deeper than the
//! marker's depth are dropped, the activation at that depth (it must run the marker's function) resumes at the
//! marker's call site as if that call returned (its Done is the marker), and the walk goes on.
//!
//! # Unwinding (exceptions)
//! An exception leaves activations without their returns too. A block ending in an `invoke` is no predicate:
//! its normal successor follows the `invoke`'s Done, and its unwind edge is taken only when an unwind marker
//! ([`Program::with_unwind`]) comes where an activation is read — written by a landing pad, first thing, with
//! the landing pad's function and activation depth. The activations deeper than that depth are dropped (frames
//! the exception passed through, with or without cleanups of their own); the activation at that depth must run
//! the marker's function and wait at the `invoke` (its block's last call site): the walk crosses the unwind
//! edge into the landing pad. A cleanup's `resume` leaves its function by a return edge, and the next landing
//! pad up the stack writes its own marker.
//!
//! # Abandoned activations (exceptions and `longjmp`s caught in untraced code)
//! An exception thrown in a traced activation that untraced code catches — libstdc++'s `istream` catches what
//! a program's `streambuf::underflow` throws — or a `longjmp` to a `setjmp` in untraced code leaves the traced
//! activations it passed without their returns, and without a landing pad or resync marker of their own. The
//! untraced code then returns to the traced call site that called it, which finds the thread state of a
//! deeper activation instead of its own: it writes an abandon marker ([`Program::with_abandon`]) with its own
//! activation's depth where an activation is read (the innermost activation left waits at a call site: the
//! throw or the `longjmp` is a call), and the number of the call site it returns from. The reader drops the
//! activations deeper than that depth; the one at the depth must wait at that site (a program that switches
//! stacks — coroutines — could otherwise make a state from another stack look deeper), it returns from there
//! (the marker is the site's Done), and the walk goes on.
//!
//! # Direct calls
//! At a call site that calls a traced function directly ([`FuncTables::direct_callee`]) the reader knows the
//! callee, so the writer *announces* it there and its entry costs one bit instead of a flag and an id. Only
//! the first activation read at such a site is announced — the site is *fresh* until an activation begins
//! there — and its alphabet is then `1` = the announced callee, `00` = Done, `01` + id = any other
//! activation (a callback through an interposed function, a signal handler, a resync or unwind marker). An
//! activation read anywhere else (a site whose callee is not known, a site after its first activation, the top
//! level) is `1` + id or `0` = Done. The decoder knows which alphabet applies: it passes the announced callee
//! to [`DecisionSource::activation`].
//!
//! When the announced callee's activation begins at its site (its `1`), that very function was called there,
//! so its return ends the site: nothing else can run there (a function wrapping the callee, or a signal
//! handler, entering traced code after it is an abnormal transfer the writer detects). The site's Done then
//! follows without being written — unless the callee may end with `resume` ([`FuncTables::may_resume`]),
//! which the reader takes for a return while the exception goes on to a landing pad whose marker the site
//! must read, or in a tail call ([`FuncTables::with_tail_calls`]), whose callee's activation comes next at the
//! site. A direct call thus costs 1 bit, not 22.
//!
//! # Tail calls
//! A `musttail` call ends its caller's activation: the caller's block that makes it is a return block (the
//! walk takes its return edge), the writer puts the caller's call site back before the call, as a return
//! would, and the callee runs as if the caller's caller had called it at that site — an activation of its own
//! there if it is traced, the site's Done after it.
//!
//! # Implicit calls
//! At a direct call site marked implicit ([`FuncTables::with_implicit_sites`]) the callee surely runs exactly
//! once and nothing else runs at the site itself, so the writer writes neither its `Enter` nor the site's
//! `Done`. The reader begins the callee's activation there without reading, walks it (reading whatever the
//! callee writes: decisions, its own call sites' markers), and when it returns, the site is done. A writer
//! has two ways to make a call implicit:
//! - a *copy*: a function whose entry determines its whole path — no decision, no call site, no EOF
//!   ([`FuncTables::is_marker_free`]: a straight-line leaf) — is called through a copy without markers; the
//!   reader's walk of it reads nothing. It saves the call's two bits and lets the optimiser inline the copy;
//! - a *certain* call: the callee is a definition the call is sure to run (not replaceable at link or load
//!   time), whose entry writes nothing when the call site announces it as certain. Callbacks, `longjmp` and
//!   exceptions inside the callee are read inside its activation as anywhere else. It saves the call's two
//!   bits.
//!
//! [`Program::check_implicit`] checks that every implicit callee is a function of the program.
//!
//! # Starting mid-stream ([`regenerate_from`])
//! A flight recorder keeps only a stream's tail, and a traced region starts inside the program: the walk then
//! starts at a sync point, where the writer knew every activation on the thread's stack ([`ResumePoint`]): the
//! activations waiting at call sites (no witness pending there, by blocking), and, for a sync right after an
//! `Enter` marker, the activation that just began.

use super::runs::RunStep;
use super::tables::{FuncTables, Program, NONE, PRED, RUN, SPECIAL};
use super::FuncId;
use crate::graph::{BlockId, EdgeId};

/// A resync marker: where a `setjmp` call returned again.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Resync {
    /// The function of the `setjmp` call.
    pub func: FuncId,
    /// Its activation's depth in the thread (1: the outermost traced activation).
    pub depth: u32,
    /// The block of the call.
    pub block: BlockId,
    /// The call's index among the block's call sites.
    pub call: u32,
}

/// An unwind marker: a landing pad was entered (an exception caught or being cleaned up there).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Unwind {
    /// The landing pad's function.
    pub func: FuncId,
    /// Its activation's depth in the thread (1: the outermost traced activation).
    pub depth: u32,
}

/// An abandon marker: a call site returned after untraced code caught an exception or `longjmp` that left
/// deeper activations.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Abandon {
    /// The returning activation's depth in the thread (1: the outermost traced activation).
    pub depth: u32,
    /// The writer's number of the call site it returns from (see [`FuncTables::with_first_site`]).
    pub site: u32,
}

/// What went wrong reading the next decision.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// The trace ended (a truncated trace: a crash, or a flight-recorder window).
    Ended,
    /// The next item is not what the position calls for (a corrupt trace, or the wrong metadata).
    Unexpected,
}

/// Why a trace could not be regenerated; `func`/`block` say where the walk was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegenError {
    /// The stream failed at this point.
    #[error("trace {error:?} in {func:?} at {block:?}")]
    Stream {
        /// What failed.
        error: StreamError,
        /// The function being regenerated (none at the top level).
        func: Option<FuncId>,
        /// Its current block.
        block: Option<BlockId>,
    },
    /// A witness value no out-edge of this predicate admits, or a witnessed edge crossed with another pending.
    #[error("witness {value} does not fit {func} at {block}")]
    BadWitness {
        /// The function.
        func: FuncId,
        /// The block.
        block: BlockId,
        /// The value read.
        value: u32,
    },
    /// An activation of a function the program does not have.
    #[error("activation of unknown function {0}")]
    UnknownFunction(u32),
    /// The walk reached a block with no traced way out (only left abnormally), yet the trace goes on.
    #[error("{func} has no way out of {block}")]
    DeadEnd {
        /// The function.
        func: FuncId,
        /// The block.
        block: BlockId,
    },
    /// More blocks than the caller allowed (a decision-free infinite loop, or a corrupt trace).
    #[error("more than {0} blocks")]
    BlockLimit(u64),
    /// The walk went round a loop that reads nothing — no decision, no call site that reads a marker — so it
    /// would never end: the thread was still in that loop when its stream ended (another thread's `exit`, a
    /// kill). How many times it went round is not recorded.
    #[error("{func} runs a loop without decisions at {block}: the trace ends inside it")]
    EndlessLoop {
        /// The function.
        func: FuncId,
        /// A block of the loop.
        block: BlockId,
    },
    /// A resync marker that fits no activation on the stack (a corrupt trace).
    #[error("resync marker {0:?} fits no activation")]
    BadResync(Resync),
    /// An unwind marker that fits no activation waiting at an `invoke` (a corrupt trace).
    #[error("unwind marker {0:?} fits no activation waiting at an invoke")]
    BadUnwind(Unwind),
    /// An abandon marker that names no activation waiting at that ordinary call site below the innermost one
    /// (a corrupt trace, or a program that switches stacks: coroutines).
    #[error("abandon marker {0:?} fits no activation")]
    BadAbandon(Abandon),
}

/// Where regeneration reads its decisions: one implementation per encoding. The decoder passes the context
/// (function, vertex, token width), so an encoding needs no tags.
pub trait DecisionSource {
    /// The next witness value of `f`, read at `v`, `width` bits wide in the bit-level encodings.
    fn witness(&mut self, f: FuncId, v: BlockId, width: u8) -> Result<u32, StreamError>;
    /// At a call site or at the top level: the next activation's function, or `None` for Done. `announced`:
    /// the site is a fresh direct call site of this callee (see the module docs, "Direct calls").
    fn activation(&mut self, announced: Option<FuncId>, func_bits: u8) -> Result<Option<FuncId>, StreamError>;
    /// After an activation of the program's resync id: the marker. Encodings without markers have none.
    fn resync(&mut self, _func_bits: u8) -> Result<Resync, StreamError> {
        Err(StreamError::Unexpected)
    }
    /// After an activation of the program's unwind id: the marker. Encodings without markers have none.
    fn unwind(&mut self, _func_bits: u8) -> Result<Unwind, StreamError> {
        Err(StreamError::Unexpected)
    }
    /// After an activation of the program's abandon id: the depth of the activation that returns. Encodings
    /// without markers have none.
    fn abandon(&mut self) -> Result<Abandon, StreamError> {
        Err(StreamError::Unexpected)
    }
}

/// Where regeneration writes the execution: every block entered, in order (EXIT included), and every edge.
pub trait StepSink {
    /// `f` entered `b`.
    fn block(&mut self, f: FuncId, b: BlockId);
    /// `f` crossed `e` (called before the `block` of its target).
    #[inline]
    fn edge(&mut self, _f: FuncId, _e: EdgeId) {}
    /// `f` crossed `e` into `to`: every block but an activation's first is entered this way. A sink that
    /// counts blocks can count only the edges here and derive the blocks' counts from them afterwards (one
    /// update per step instead of two: the regenerator's hot loop).
    #[inline]
    fn step(&mut self, f: FuncId, e: EdgeId, to: BlockId) {
        self.edge(f, e);
        self.block(f, to);
    }
    /// `f` crossed the straight run that starts at position `at` of its tables: `steps`, in order (see
    /// [`super::runs`]). A sink that counts can count the run once (per function, `at` <
    /// [`FuncTables::num_run_positions`]) and derive its edges with [`FuncTables::add_run_counts`].
    #[inline]
    fn run(&mut self, f: FuncId, _at: u32, steps: &[RunStep]) {
        for s in steps {
            self.step(f, s.edge, s.target);
        }
    }
    /// One call site of `f`'s current block `b` returned (call sites finish in block order; the activations
    /// of traced callees a site ran come before). Lets a consumer tell several activations from one call
    /// (callbacks) from activations of the block's next call site.
    #[inline]
    fn site_done(&mut self, _f: FuncId, _b: BlockId) {}
    /// The activations deeper than `depth` (the outermost is depth 1) ended without returning: a `longjmp`
    /// or an exception passed them, or untraced code caught one. The activation at `depth` goes on — after
    /// call `resume.1` of its block `resume.0` when that call returned again (a `setjmp`: the walk goes on from
    /// that block), else where it waited (an unwind edge or its call site's return follows). Lets a consumer
    /// that keeps its own stack of activations drop the same ones.
    #[inline]
    fn cut_to(&mut self, _depth: usize, _resume: Option<(BlockId, u32)>) {}
}

impl StepSink for Vec<(FuncId, BlockId)> {
    #[inline]
    fn block(&mut self, f: FuncId, b: BlockId) {
        self.push((f, b));
    }
}

/// A suspended or running activation.
#[derive(Copy, Clone, Debug)]
struct Frame {
    func: FuncId,
    vertex: BlockId,
    pending: u32,
    calls_left: u32,
    /// No activation has begun at the current call site yet (its direct callee, if any, is announced; an
    /// implicit call is walked). At an implicit site that is no longer fresh, its callee has returned.
    fresh: bool,
    /// The activation that began at the current call site is its announced callee, which cannot resume: its
    /// return ends the site (module docs, "Direct calls").
    bound: bool,
}

impl Frame {
    /// The callee of the waiting call site if the call is implicit there.
    #[inline]
    fn implicit_callee(&self, program: &Program) -> Option<FuncId> {
        if self.calls_left == 0 {
            return None;
        }
        let t = &program.funcs[self.func.index()];
        t.implicit_callee(self.vertex, t.calls[self.vertex.index()] - self.calls_left)
    }

    /// The callee announced at the waiting call site: its direct callee while the site is fresh.
    #[inline]
    fn announced(&self, program: &Program) -> Option<FuncId> {
        if !self.fresh {
            return None;
        }
        let t = &program.funcs[self.func.index()];
        t.direct_callee(self.vertex, t.calls[self.vertex.index()] - self.calls_left)
    }
}

/// Whether an activation of `g` beginning at a call site that announced `announced` binds the site: it is the
/// announced callee, which can neither resume nor tail-call, so its return ends the site (module docs, "Direct
/// calls").
#[inline]
fn binds(program: &Program, announced: Option<FuncId>, g: FuncId) -> bool {
    announced == Some(g) && program.func(g).is_some_and(FuncTables::binds_its_site)
}

/// The call site `fr` waits at returned (its Done, or an abandon marker standing for it); whether its block
/// has call sites left.
#[inline]
fn site_returned<S: StepSink>(fr: &mut Frame, sink: &mut S) -> bool {
    sink.site_done(fr.func, fr.vertex);
    fr.calls_left -= 1;
    fr.fresh = true;
    fr.bound = false;
    fr.calls_left > 0
}

/// How a walk arrives at its frame's vertex.
#[derive(Copy, Clone)]
enum Arrival {
    /// An activation begins at its entry.
    Entered,
    /// Across this edge (an unwind edge into a landing pad).
    Crossed(EdgeId),
    /// A waiting activation goes on after its vertex's call sites: the vertex is written already.
    Resumed,
}

/// Where a walk stopped.
enum Stop {
    Returned,
    /// At a call site, an activation of this function begins; the frame waits with its call sites left.
    Enter(FuncId),
}

/// An activation waiting at a call site when the stream starts mid-way.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// Its function.
    pub func: FuncId,
    /// The block of the call site.
    pub block: BlockId,
    /// The call's index among the block's call sites.
    pub call: u32,
    /// The activation that began at the site is the site's announced callee, whose return ends the site
    /// (module docs, "Direct calls"; the writer's call-site state says so).
    pub bound: bool,
}

/// Where a stream read from a sync point starts: the waiting activations, outermost first, and the function
/// whose activation just began (its `Enter` marker is right before the sync point), if any; with none, the
/// stream starts where an activation or the innermost call site's Done is read (at the top level when no
/// activation waits).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResumePoint {
    /// The waiting activations, depth 1 first.
    pub waiting: Vec<Waiting>,
    /// The activation entered right before the sync point.
    pub entered: Option<FuncId>,
}

/// Why a resume point does not fit the program.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the sync point's activation {0} does not fit the program")]
pub struct BadResume(pub usize);

/// Regenerates one thread's trace into `sink`; returns the number of blocks written. Stops with
/// [`RegenError::BlockLimit`] after `max_blocks` blocks.
pub fn regenerate<D: DecisionSource, S: StepSink>(
    program: &Program,
    src: &mut D,
    sink: &mut S,
    max_blocks: u64,
) -> Result<u64, RegenError> {
    regenerate_from(program, &ResumePoint::default(), src, sink, max_blocks)
        .unwrap_or_else(|_| unreachable!("an empty resume point fits every program"))
}

/// [`regenerate`] from a sync point: `src` starts right after it, `at` says what the stack held there. The
/// outer error is a resume point that does not fit the program (a corrupt trace, or the wrong metadata).
pub fn regenerate_from<D: DecisionSource, S: StepSink>(
    program: &Program,
    at: &ResumePoint,
    src: &mut D,
    sink: &mut S,
    max_blocks: u64,
) -> Result<Result<u64, RegenError>, BadResume> {
    let mut stack: Vec<Frame> = Vec::with_capacity(at.waiting.len());
    for (i, w) in at.waiting.iter().enumerate() {
        let t = program.func(w.func);
        let calls = t.and_then(|t| t.calls.get(w.block.index()).copied());
        match calls {
            // A sync point is never taken at a fresh direct call site: the activations above it began (at an
            // implicit site, a certain call's callee, which takes sync points like any activation).
            Some(n) if w.call < n => stack.push(Frame {
                func: w.func,
                vertex: w.block,
                pending: NONE,
                calls_left: n - w.call,
                fresh: false,
                bound: w.bound,
            }),
            _ => return Err(BadResume(i)),
        }
    }
    if at.entered.is_some_and(|f| program.func(f).is_none()) {
        return Err(BadResume(at.waiting.len()));
    }
    Ok(regenerate_stack(program, stack, at.entered, src, sink, max_blocks))
}

fn regenerate_stack<D: DecisionSource, S: StepSink>(
    program: &Program,
    mut stack: Vec<Frame>,
    mut start: Option<FuncId>,
    src: &mut D,
    sink: &mut S,
    max_blocks: u64,
) -> Result<u64, RegenError> {
    let mut budget = max_blocks;
    loop {
        let next = match start.take() {
            Some(f) => Some(f),
            None => match stack.last().map(|top| (top.fresh, top.bound, top.implicit_callee(program))) {
                // An implicit call begins (walked without reading), or its callee returned (no Done to read);
                // the announced callee of a bound site returned (its Done follows).
                Some((true, _, Some(g))) => Some(g),
                Some((false, _, Some(_))) | Some((false, true, None)) => None,
                _ => {
                    let announced = stack.last().and_then(|f| f.announced(program));
                    let a = src.activation(announced, program.func_bits).map_err(|error| {
                        let top = stack.last();
                        RegenError::Stream { error, func: top.map(|f| f.func), block: top.map(|f| f.vertex) }
                    })?;
                    if let (Some(g), Some(top)) = (a, stack.last_mut()) {
                        top.bound = binds(program, announced, g);
                    }
                    a
                }
            },
        };
        let (mut frame, arrival) = match next {
            Some(r) if Some(r) == program.resync => {
                let top = stack.last();
                let (func, block) = (top.map(|f| f.func), top.map(|f| f.vertex));
                let m = src.resync(program.func_bits).map_err(|error| RegenError::Stream { error, func, block })?;
                let fits = (m.depth as usize) <= stack.len()
                    && m.depth > 0
                    && stack[m.depth as usize - 1].func == m.func
                    && program.func(m.func).and_then(|t| t.calls.get(m.block.index())).is_some_and(|&n| m.call < n);
                if !fits {
                    return Err(RegenError::BadResync(m));
                }
                stack.truncate(m.depth as usize);
                sink.cut_to(m.depth as usize, Some((m.block, m.call)));
                let mut fr = stack.pop().expect("depth ≥ 1");
                fr.vertex = m.block;
                fr.pending = NONE;
                // The calls after the setjmp call are left; the marker was its Done.
                fr.calls_left = program.funcs[m.func.index()].calls[m.block.index()] - m.call - 1;
                fr.fresh = true;
                fr.bound = false;
                if fr.calls_left > 0 {
                    stack.push(fr);
                    continue;
                }
                (fr, Arrival::Resumed)
            }
            Some(u) if Some(u) == program.unwind => {
                let top = stack.last();
                let (func, block) = (top.map(|f| f.func), top.map(|f| f.vertex));
                let m = src.unwind(program.func_bits).map_err(|error| RegenError::Stream { error, func, block })?;
                let at = (m.depth as usize).checked_sub(1).and_then(|i| stack.get(i));
                // The activation must wait at its block's last call site, an `invoke`.
                let edge = at.filter(|fr| fr.func == m.func && fr.calls_left == 1).and_then(|fr| {
                    let e = program.funcs[fr.func.index()].unwind[fr.vertex.index()];
                    (e != NONE).then_some(EdgeId(e))
                });
                let Some(edge) = edge else { return Err(RegenError::BadUnwind(m)) };
                stack.truncate(m.depth as usize);
                sink.cut_to(m.depth as usize, None);
                let mut fr = stack.pop().expect("depth ≥ 1");
                sink.site_done(fr.func, fr.vertex);
                fr.vertex = program.funcs[fr.func.index()].edge_to[edge.index()];
                fr.pending = NONE;
                fr.calls_left = 0;
                fr.bound = false;
                (fr, Arrival::Crossed(edge))
            }
            Some(a) if Some(a) == program.abandon => {
                let top = stack.last();
                let (func, block) = (top.map(|f| f.func), top.map(|f| f.vertex));
                let m = src.abandon().map_err(|error| RegenError::Stream { error, func, block })?;
                let depth = m.depth;
                // The returning activation is below the innermost one (which waits where the marker was
                // read) and waits at an ordinary call site (an implicit site writes no Done, so no marker):
                // the one the marker names, when the program knows its sites' numbers.
                let fits = depth > 0
                    && (depth as usize) < stack.len()
                    && stack.get(depth as usize - 1).is_some_and(|fr| {
                        let t = &program.funcs[fr.func.index()];
                        let call = t.calls[fr.vertex.index()].wrapping_sub(fr.calls_left);
                        fr.calls_left > 0
                            && fr.implicit_callee(program).is_none()
                            && t.site_number(fr.vertex, call).is_none_or(|s| s == m.site)
                    });
                if !fits {
                    return Err(RegenError::BadAbandon(m));
                }
                stack.truncate(depth as usize);
                sink.cut_to(depth as usize, None);
                let mut fr = stack.pop().expect("depth ≥ 1");
                // The marker is the site's Done.
                if site_returned(&mut fr, sink) {
                    stack.push(fr);
                    continue;
                }
                (fr, Arrival::Resumed)
            }
            Some(f) => {
                let t = program.func(f).ok_or(RegenError::UnknownFunction(f.0))?;
                if let Some(waiting) = stack.last_mut() {
                    waiting.fresh = false; // an activation began at its call site
                }
                (
                    Frame { func: f, vertex: t.entry, pending: NONE, calls_left: 0, fresh: true, bound: false },
                    Arrival::Entered,
                )
            }
            None => {
                let Some(mut fr) = stack.pop() else { return Ok(max_blocks - budget) };
                if site_returned(&mut fr, sink) {
                    stack.push(fr);
                    continue;
                }
                (fr, Arrival::Resumed)
            }
        };
        let t = &program.funcs[frame.func.index()];
        let stop = walk(program, t, &mut frame, arrival, src, sink, &mut budget).map_err(|e| match e {
            RegenError::BlockLimit(_) => RegenError::BlockLimit(max_blocks),
            e => e,
        })?;
        if let Stop::Enter(g) = stop {
            frame.fresh = false;
            stack.push(frame);
            start = Some(g);
        }
    }
}

/// Walks `frame`'s function from its vertex (written first unless `arrival` resumes it) until it returns or
/// enters a callee at a call site (call sites whose callees are all done — the common case of a call into
/// untraced code — are passed without leaving the loop). The hot loop: one row lookup and one sink step per
/// block.
#[inline]
fn walk<D: DecisionSource, S: StepSink>(
    program: &Program,
    t: &FuncTables,
    frame: &mut Frame,
    arrival: Arrival,
    src: &mut D,
    sink: &mut S,
    budget: &mut u64,
) -> Result<Stop, RegenError> {
    let f = frame.func;
    let mut v = frame.vertex;
    let mut pending = frame.pending;
    let stream = |error, v| RegenError::Stream { error, func: Some(f), block: Some(v) };
    let spend = |budget: &mut u64| {
        if *budget == 0 {
            return Err(RegenError::BlockLimit(0));
        }
        *budget -= 1;
        Ok(())
    };
    // Steps since the last read: without reads the walk's state is its vertex alone (the pending witness stays),
    // so more steps than the function has vertices go round a loop that never ends.
    let mut quiet = 0usize;
    // Whether v's own events (its call sites, or the return at EXIT) are still to be read.
    let mut arrived = match arrival {
        Arrival::Entered => {
            spend(budget)?;
            sink.block(f, v);
            true
        }
        Arrival::Crossed(e) => {
            spend(budget)?;
            sink.step(f, e, v);
            true
        }
        Arrival::Resumed => false,
    };
    loop {
        quiet += 1;
        if quiet > t.verts.len() + 1 {
            return Err(RegenError::EndlessLoop { func: f, block: v });
        }
        let ve = &t.verts[v.index()];
        if arrived && ve.kind & SPECIAL != 0 {
            if v == t.exit {
                if t.eof != NONE {
                    if pending == NONE {
                        pending = src.witness(f, v, ve.width).map_err(|e| stream(e, v))?;
                    }
                    if pending != t.eof {
                        return Err(RegenError::BadWitness { func: f, block: v, value: pending });
                    }
                } else if pending != NONE {
                    return Err(RegenError::BadWitness { func: f, block: v, value: pending });
                }
                return Ok(Stop::Returned);
            }
            let n = t.calls[v.index()];
            let mut left = n;
            if left > 0 && pending != NONE {
                return Err(RegenError::BadWitness { func: f, block: v, value: pending });
            }
            while left > 0 {
                if let Some(g) = t.implicit_callee(v, n - left) {
                    // Walked without reading (the module docs, "Implicit calls").
                    frame.vertex = v;
                    frame.pending = NONE;
                    frame.calls_left = left;
                    return Ok(Stop::Enter(g));
                }
                let announced = t.direct_callee(v, n - left);
                quiet = 0;
                match src.activation(announced, program.func_bits).map_err(|e| stream(e, v))? {
                    None => {
                        sink.site_done(f, v);
                        left -= 1
                    }
                    Some(g) => {
                        frame.vertex = v;
                        frame.pending = NONE;
                        frame.calls_left = left;
                        frame.bound = binds(program, announced, g);
                        return Ok(Stop::Enter(g));
                    }
                }
            }
        }
        arrived = true;
        if ve.kind & RUN != 0 {
            // The whole run, or (fewer blocks left than it has) its first step.
            if let Some(run) = take_run(t, ve.lo, ve.len, budget) {
                sink.run(f, ve.lo, run);
                v = BlockId(ve.row);
            } else {
                let s = t.runs.get(ve.lo as usize).ok_or(RegenError::DeadEnd { func: f, block: v })?;
                v = s.target;
                spend(budget)?;
                sink.step(f, s.edge, v);
            }
            continue;
        }
        if ve.len == 0 {
            return Err(RegenError::DeadEnd { func: f, block: v });
        }
        let tr = if ve.kind & PRED == 0 {
            t.trans[ve.row as usize]
        } else {
            if pending == NONE {
                quiet = 0;
                pending = src.witness(f, v, ve.width).map_err(|e| stream(e, v))?;
            }
            let i = pending.wrapping_sub(ve.lo);
            if i >= ve.len {
                return Err(RegenError::BadWitness { func: f, block: v, value: pending });
            }
            let tr = t.trans[(ve.row + i) as usize];
            if tr.target.0 == NONE {
                return Err(RegenError::BadWitness { func: f, block: v, value: pending });
            }
            tr
        };
        if tr.witness != NONE {
            if pending == NONE {
                quiet = 0;
                pending = src.witness(f, v, ve.width).map_err(|e| stream(e, v))?;
            }
            if pending != tr.witness {
                return Err(RegenError::BadWitness { func: f, block: v, value: pending });
            }
            pending = NONE;
        }
        v = tr.target;
        spend(budget)?;
        sink.step(f, tr.edge, v);
        // The target is plain: its run too (with fewer blocks left than it has, the loop steps through it).
        if tr.run != NONE {
            if let Some(run) = take_run(t, tr.run, tr.run_len, budget) {
                sink.run(f, tr.run, run);
                v = tr.after;
            }
        }
    }
}

/// The straight run of `len` steps at `at` in `t`'s runs, charged to `budget` — if the budget holds all of it.
#[inline]
fn take_run<'t>(t: &'t FuncTables, at: u32, len: u32, budget: &mut u64) -> Option<&'t [RunStep]> {
    if u64::from(len) > *budget {
        return None;
    }
    let run = t.runs.get(at as usize..at as usize + len as usize)?;
    *budget -= u64::from(len);
    Some(run)
}
