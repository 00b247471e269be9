//! The profiling runtime as a pure simulator: the instrumentation of §5.5 (context) and §6.3 (piecewise)
//! threaded through an explicit execution trace.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998, §5.5 and §6.3 (Figs.
//! 8, 9, 16, 17): `pathNum` is one accumulator shared by all activations (by reference); numValidCompsFromExit
//! (NVC) is passed by value, so the call stack is Algorithm 5.1's NVCstack; each activation keeps
//! `pathNumOnEntry` (context: a back edge w→v records `pathNum + ρ_{w→GExit}(NVC)` and restarts with
//! `pathNumOnEntry + ρ_{Entry_P→v}(NVC)`); around a recursive (or cut) call the caller saves `pathNum` in
//! `pathNumBeforeCall` — the *pending path* — starts the callee's path at its Entry_global offset with NVC = 1,
//! records it when the callee returns and resumes the pending path. Piecewise mode instead keeps
//! `cntOpenLfParens`: a back edge records the path and restarts at GEntry_P with cnt = 0 and
//! NVC = numUnbalRLPaths\[Exit_P\]; a return with cnt = 0 adds edgeValue (Eq. 35) and resets the caller's NVC to
//! numUnbalRLPaths\[Exit_S\] (the erratum-corrected rule of Algorithm 6.1); both `pathNum` and cnt are saved
//! around recursive calls.
//!
//! Extensions, documented because the paper has none: an abnormal termination ([`Event::Terminate`] along a
//! `Termination` edge) records the running path through that edge and then flushes every pending path whose
//! call block has a `Termination` edge (the first one, in `EdgeId` order) — the §9.2.1 "record pathNum and every
//! pendingPaths entry" — and drops pending paths of call blocks without one. [`Callee::External`] calls execute
//! no program code.
//!
//! [`Simulator::counting_arrivals`] simulates the runtime the pass emits: the truncated path of a block is
//! counted on every *arrival* at the block ([`super::counted_termination`]) instead of at the termination, and
//! nothing is flushed; [`super::net_counts_from_arrivals`] turns that profile back into this one.
//!
//! Invariant: for every trace accepted, the profile gains exactly the numbers ([`super::encode`]) of the
//! observable paths the execution is cut into — each occurrence once — which the property tests check against
//! an independent segmentation of the same execution.
//!
//! [`Simulator::run_forking`] adds `fork()` to the arrival-counting runtime: at a point where the running block
//! counts arrivals (its call may be the one that forks) the execution splits into the parent, which goes on in
//! this simulator, and a child with zeroed counters that resumes every activation on the stack as control
//! returns to it, recording the re-entries the instrumented code records: of the counted block's truncated path
//! (the running block, and callers waiting in recursive or cut calls with their pending paths), or of the call
//! block (callers waiting in interprocedural calls).
//!
//! [`Callee::External`]: super::Callee::External

use super::callgraph::SiteRole;
use super::numbering::{ArcKind, ExitTarget, Mode, Numbering, OutArc};
use super::program::{CallSiteId, Callee, ProcId};
use crate::ball_larus::dag::CfgEdgeRole;
use crate::graph::{BlockId, EdgeId, EdgeKind};
use std::collections::BTreeMap;

/// What a `fork()`ed child records ([`Simulator::run_forking`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForkedChild {
    /// The child's own profile (its counters start at zero at the fork).
    pub profile: Profile,
    /// Re-entries of counted truncated paths: path number → count.
    pub path_reentries: BTreeMap<u128, u64>,
    /// Re-entries of interprocedural call blocks: (procedure, block) → count.
    pub block_reentries: BTreeMap<(ProcId, BlockId), u64>,
}

/// What an activation in flight at a fork records when a child resumes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Reentry {
    /// The truncated path counted on arrival at the block of its in-flight call.
    Path(u128),
    /// Its interprocedural call block.
    Block(ProcId, BlockId),
}

/// One step of a program execution in the original supergraph G* (back edges and recursive calls included).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// Take the `Branch` edge (possibly a back edge) out of the current block; not allowed out of a call block.
    Edge(EdgeId),
    /// Execute the call of the current block (a call block): enter the callee's entry block, or for an external
    /// call continue at the return-site block.
    Call,
    /// Take the `Return` edge out of the current block: return to the caller's return-site block, or end the
    /// execution if this is the outermost activation.
    Return(EdgeId),
    /// Take the `Termination` edge out of the current block: the program stops here.
    Terminate(EdgeId),
}

/// One execution: an invocation of root `root` from outside the program, to its return or termination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Execution {
    /// The procedure invoked (must be a root of the call graph).
    pub root: ProcId,
    /// What happens, in order.
    pub events: Vec<Event>,
}

/// Path number → how often it was recorded.
pub type Profile = BTreeMap<u128, u64>;

/// Why a trace could not be simulated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The execution starts in a procedure that is not a root (it has no Entry_global edge).
    #[error("{0} is not a root; an execution must start at a root")]
    NotARoot(ProcId),
    /// Event `position` is not possible in the current state.
    #[error("event {position}: {reason}")]
    BadEvent {
        /// Index into `events`.
        position: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The events end before the outermost activation returned or terminated.
    #[error("the trace ends before the execution does")]
    Incomplete,
    /// A path number does not fit in a `u128`.
    #[error("path number arithmetic overflows at event {position}")]
    Overflow {
        /// Index into `events`.
        position: usize,
    },
    /// A count in the profile would exceed `u64::MAX`.
    #[error("a profile counter overflows")]
    CounterOverflow,
    /// Arrival counting: a termination no instrumented program makes — the `Termination` edge of an
    /// interprocedural call block taken before its call (the pass lets only the call itself leave such a
    /// block), or one inside a recursive or cut callee whose call block has no `Termination` edge (the call was
    /// known to return).
    #[error("event {position}: a termination the instrumented program cannot make")]
    ImpossibleTermination {
        /// Index into `events`.
        position: usize,
    },
    /// [`Simulator::run_forking`]: no call can fork at that point (the running block does not count arrivals,
    /// or a caller waits in a call known to return), or the simulator does not count arrivals.
    #[error("event {position}: no call in flight there can fork")]
    ImpossibleFork {
        /// Index into `events`.
        position: usize,
    },
}

/// How an activation was entered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Entered {
    /// By the execution's start.
    Root,
    /// Through an interprocedural call site.
    Call(CallSiteId),
    /// Through a recursive or cut call site: its own path from Entry_global.
    Separate(CallSiteId),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Pending {
    /// `pathNumBeforeCall`.
    path_num: u128,
    /// The saved `cntOpenLfParens` (piecewise).
    cnt: u64,
}

#[derive(Clone, Debug)]
struct Activation {
    proc: ProcId,
    block: BlockId,
    /// numValidCompsFromExit (by value).
    nvc: u128,
    /// `pathNumOnEntry` (context).
    path_num_on_entry: u128,
    entered: Entered,
    /// Set while this activation waits for a recursive or cut call to return.
    pending: Option<Pending>,
    /// In a forked child: what the activation records when control comes back to it (cleared then).
    reentry: Option<Reentry>,
}

/// Accumulates the profile of executions, exactly as the instrumented program would.
#[derive(Clone, Debug)]
pub struct Simulator<'n, 'a> {
    num: &'n Numbering<'a>,
    arrivals: bool,
    profile: Profile,
}

impl<'n, 'a> Simulator<'n, 'a> {
    /// A simulator with an empty profile for `num`'s mode.
    pub fn new(num: &'n Numbering<'a>) -> Simulator<'n, 'a> {
        Simulator { num, arrivals: false, profile: Profile::new() }
    }

    /// A simulator of the arrival-counting runtime: truncated paths count arrivals (see the module docs).
    pub fn counting_arrivals(num: &'n Numbering<'a>) -> Simulator<'n, 'a> {
        Simulator { num, arrivals: true, profile: Profile::new() }
    }

    /// Runs one execution; on error the profile is left unchanged.
    pub fn run(&mut self, exec: &Execution) -> Result<(), TraceError> {
        let recorded = Run::execute(self.num, self.arrivals, exec)?;
        self.add(recorded)
    }

    /// Runs one execution of the arrival-counting runtime that calls `fork()` just before event `fork_at`, inside
    /// a call of the running block: the parent goes on with the rest of `exec` (its counts go into this
    /// simulator's profile, as [`Simulator::run`]), the child with `child` (events from the same point on). The
    /// child's own profile and re-entries are returned. On error the profile is left unchanged.
    pub fn run_forking(
        &mut self,
        exec: &Execution,
        fork_at: usize,
        child: &[Event],
    ) -> Result<ForkedChild, TraceError> {
        let impossible = TraceError::ImpossibleFork { position: fork_at };
        let (head, tail) = match (self.arrivals, exec.events.split_at_checked(fork_at)) {
            (true, Some(split)) => split,
            _ => return Err(impossible),
        };
        let mut parent = Run::start(self.num, self.arrivals, exec.root)?;
        parent.steps(head, 0)?;
        let mut forked = parent.fork().ok_or(impossible)?;
        parent.steps(tail, fork_at)?;
        let recorded = parent.finish()?;
        forked.steps(child, fork_at)?;
        forked.resume_top();
        let mut out = ForkedChild::default();
        for r in std::mem::take(&mut forked.reentries) {
            match r {
                Reentry::Path(t) => *out.path_reentries.entry(t).or_insert(0) += 1,
                Reentry::Block(p, b) => *out.block_reentries.entry((p, b)).or_insert(0) += 1,
            }
        }
        for n in forked.finish()? {
            *out.profile.entry(n).or_insert(0) += 1;
        }
        self.add(recorded)?;
        Ok(out)
    }

    fn add(&mut self, recorded: Vec<u128>) -> Result<(), TraceError> {
        let mut gained = Profile::new();
        for n in recorded {
            let slot = gained.entry(n).or_insert(0);
            *slot = slot.checked_add(1).ok_or(TraceError::CounterOverflow)?;
        }
        for (n, c) in &gained {
            if self.profile.get(n).copied().unwrap_or(0).checked_add(*c).is_none() {
                return Err(TraceError::CounterOverflow);
            }
        }
        for (n, c) in gained {
            let slot = self.profile.entry(n).or_insert(0);
            *slot = slot.saturating_add(c);
        }
        Ok(())
    }

    /// The profile so far.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The profile, consuming the simulator.
    pub fn into_profile(self) -> Profile {
        self.profile
    }
}

#[derive(Clone)]
struct Run<'n, 'a> {
    num: &'n Numbering<'a>,
    piecewise: bool,
    arrivals: bool,
    path_num: u128,
    cnt: u64,
    frames: Vec<Activation>,
    recorded: Vec<u128>,
    position: usize,
    /// A forked child's re-entries so far.
    reentries: Vec<Reentry>,
}

impl<'n, 'a> Run<'n, 'a> {
    fn execute(num: &'n Numbering<'a>, arrivals: bool, exec: &Execution) -> Result<Vec<u128>, TraceError> {
        let mut run = Run::start(num, arrivals, exec.root)?;
        run.steps(&exec.events, 0)?;
        run.finish()
    }

    fn start(num: &'n Numbering<'a>, arrivals: bool, root: ProcId) -> Result<Run<'n, 'a>, TraceError> {
        let entry = num.root_entry(root).ok_or(TraceError::NotARoot(root))?;
        let mut run = Run {
            num,
            piecewise: num.mode() == Mode::Piecewise,
            arrivals,
            path_num: entry.offset,
            cnt: 1,
            frames: vec![Activation {
                proc: root,
                block: BlockId(0),
                nvc: 1,
                path_num_on_entry: entry.offset,
                entered: Entered::Root,
                pending: None,
                reentry: None,
            }],
            recorded: Vec::new(),
            position: 0,
            reentries: Vec::new(),
        };
        run.arrive()?;
        Ok(run)
    }

    /// Runs `events`, numbered from `first` in errors.
    fn steps(&mut self, events: &[Event], first: usize) -> Result<(), TraceError> {
        for (i, &event) in events.iter().enumerate() {
            self.position = first + i;
            if self.frames.is_empty() {
                return Err(self.bad("event after the execution ended"));
            }
            // A forked child's innermost activation resumes with its first event.
            self.resume_top();
            match event {
                Event::Edge(e) => self.edge(e)?,
                Event::Call => self.call()?,
                Event::Return(e) => self.ret(e)?,
                Event::Terminate(e) => self.terminate(e)?,
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<Vec<u128>, TraceError> {
        if !self.frames.is_empty() {
            return Err(TraceError::Incomplete);
        }
        Ok(self.recorded)
    }

    /// Records the re-entry of the running activation if it was in flight at a fork and has not resumed yet.
    fn resume_top(&mut self) {
        if let Some(r) = self.frames.last_mut().and_then(|f| f.reentry.take()) {
            self.reentries.push(r);
        }
    }

    /// The child of a `fork()` inside a call of the running block: zeroed counts, and every activation marked
    /// with what it records when it resumes. `None` if no call in flight here can fork.
    fn fork(&self) -> Option<Run<'n, 'a>> {
        let mut child = self.clone();
        child.recorded.clear();
        child.reentries.clear();
        let n = child.frames.len();
        for i in (0..n).rev() {
            let f = &child.frames[i];
            let counted = super::counted_termination(self.num, f.proc, f.block);
            let key = if i + 1 == n {
                // The running block counted its truncated path on arrival: path_num + ρ_t(NVC).
                let t = counted?;
                Reentry::Path(self.path_num.checked_add(t.rho.checked_apply(f.nvc)?)?)
            } else {
                match child.frames[i + 1].entered {
                    Entered::Call(_) => {
                        let cfg = self.num.supergraph().program().cfg(f.proc);
                        cfg.edges().iter().find(|e| e.from == f.block && e.kind == EdgeKind::Termination)?;
                        Reentry::Block(f.proc, f.block)
                    }
                    Entered::Separate(_) => {
                        let t = counted?;
                        let pending = f.pending?;
                        Reentry::Path(pending.path_num.checked_add(t.rho.checked_apply(f.nvc)?)?)
                    }
                    Entered::Root => return None,
                }
            };
            child.frames[i].reentry = Some(key);
        }
        Some(child)
    }

    fn bad(&self, reason: &'static str) -> TraceError {
        TraceError::BadEvent { position: self.position, reason }
    }

    fn overflow(&self) -> TraceError {
        TraceError::Overflow { position: self.position }
    }

    fn top(&self) -> Result<&Activation, TraceError> {
        self.frames.last().ok_or_else(|| self.bad("no activation"))
    }

    fn add(&self, a: u128, b: u128) -> Result<u128, TraceError> {
        a.checked_add(b).ok_or_else(|| self.overflow())
    }

    fn apply(&self, f: super::Linear, x: u128) -> Result<u128, TraceError> {
        f.checked_apply(x).ok_or_else(|| self.overflow())
    }

    /// The out-arc that cfg edge `e` of the current procedure became, if it is an ordinary (non-back) edge out of
    /// the current block with the given kind.
    fn arc_out(&self, e: EdgeId, kind: fn(EdgeKind) -> bool) -> Result<OutArc, TraceError> {
        let top = self.top()?;
        let program = self.num.supergraph().program();
        let cfg = program.cfg(top.proc);
        let edge = cfg.edges().get(e.index()).ok_or_else(|| self.bad("no such edge"))?;
        if edge.from != top.block || !kind(edge.kind) {
            return Err(self.bad("not an out-edge of the current block of that kind"));
        }
        match self.num.supergraph().dag(top.proc).cfg_edge_role(e) {
            CfgEdgeRole::Real(d) => self.num.arc_of(top.proc, d).copied().ok_or_else(|| self.bad("edge not in G*_fn")),
            _ => Err(self.bad("edge not in G*_fn")),
        }
    }

    fn record(&mut self, n: u128) {
        self.recorded.push(n);
    }

    /// Arrival counting: the current block was just entered; count its truncated path.
    fn arrive(&mut self) -> Result<(), TraceError> {
        if !self.arrivals {
            return Ok(());
        }
        let Some(top) = self.frames.last() else { return Ok(()) };
        if let Some(t) = super::counted_termination(self.num, top.proc, top.block) {
            let n = self.add(self.path_num, self.apply(t.rho, top.nvc)?)?;
            self.record(n);
        }
        Ok(())
    }

    fn edge(&mut self, e: EdgeId) -> Result<(), TraceError> {
        let top = self.top()?.clone();
        let program = self.num.supergraph().program();
        let cfg = program.cfg(top.proc);
        let edge = *cfg.edges().get(e.index()).ok_or_else(|| self.bad("no such edge"))?;
        if edge.from != top.block || !matches!(edge.kind, EdgeKind::Branch { .. }) {
            return Err(self.bad("not a branch out of the current block"));
        }
        if program.site_at(top.proc, top.block).is_some() {
            return Err(self.bad("a call block is left through Event::Call"));
        }
        match self.num.supergraph().dag(top.proc).cfg_edge_role(e) {
            CfgEdgeRole::Real(d) => {
                let arc = self.num.arc_of(top.proc, d).copied().ok_or_else(|| self.bad("edge not in G*_fn"))?;
                self.path_num = self.add(self.path_num, self.apply(arc.rho, top.nvc)?)?;
            }
            CfgEdgeRole::Back { exit, entry } | CfgEdgeRole::Cut { exit, entry } => {
                let exit =
                    self.num.arc_of(top.proc, exit).copied().ok_or_else(|| self.bad("no back-edge surrogate"))?;
                let entry =
                    self.num.arc_of(top.proc, entry).copied().ok_or_else(|| self.bad("no back-edge surrogate"))?;
                // §5.5 step 9 A: record the path ending w→GExit_P.
                let ended = self.add(self.path_num, self.apply(exit.rho, top.nvc)?)?;
                self.record(ended);
                if self.piecewise {
                    // §6.3 / Fig. 16: new path Entry_global→GEntry_P→v, no open call.
                    let nvc = self.num.num_unbal_rl_paths(top.proc);
                    let offset =
                        self.num.mid_entry(top.proc).map(|g| g.offset).ok_or_else(|| self.bad("no GEntry entry"))?;
                    self.path_num = self.add(offset, self.apply(entry.rho, nvc)?)?;
                    self.cnt = 0;
                    if let Some(f) = self.frames.last_mut() {
                        f.nvc = nvc;
                    }
                } else {
                    // §5.5 step 9 B: context-prefix up to Entry_P, active suffix from v.
                    self.path_num = self.add(top.path_num_on_entry, self.apply(entry.rho, top.nvc)?)?;
                }
            }
            _ => return Err(self.bad("edge not in G*_fn")),
        }
        if let Some(f) = self.frames.last_mut() {
            f.block = edge.to;
        }
        self.arrive()
    }

    fn call(&mut self) -> Result<(), TraceError> {
        let top = self.top()?.clone();
        let sg = self.num.supergraph();
        let site = sg.program().site_at(top.proc, top.block).ok_or_else(|| self.bad("not a call block"))?;
        let info = *sg.program().site(site).ok_or_else(|| self.bad("unknown call site"))?;
        let arc = match sg.dag(top.proc).cfg_edge_role(info.call_edge) {
            CfgEdgeRole::Real(d) => self.num.arc_of(top.proc, d).copied(),
            _ => None,
        }
        .ok_or_else(|| self.bad("call edge not in G*_fn"))?;
        match (sg.calls().role(site), info.callee, arc.kind) {
            (SiteRole::Interprocedural, Callee::Proc(callee), ArcKind::Call { .. }) => {
                // §5.5 step 6: the callee gets NVC = ψ_r(NVC); the call edge's value (0) is added for generality.
                self.path_num = self.add(self.path_num, self.apply(arc.rho, top.nvc)?)?;
                let nvc = self.apply(self.num.psi(top.proc, info.ret), top.nvc)?;
                self.cnt = self.cnt.checked_add(1).ok_or_else(|| self.overflow())?;
                self.frames.push(Activation {
                    proc: callee,
                    block: BlockId(0),
                    nvc,
                    path_num_on_entry: self.path_num,
                    entered: Entered::Call(site),
                    pending: None,
                    reentry: None,
                });
            }
            (
                SiteRole::Recursive | SiteRole::Cut,
                Callee::Proc(callee) | Callee::Cut(callee),
                ArcKind::Summary { .. },
            ) => {
                // §5.5 step 7 A–C: suspend the current path, start the callee's at its Entry_global offset.
                let offset =
                    self.num.root_entry(callee).map(|g| g.offset).ok_or_else(|| self.bad("callee not a root"))?;
                if let Some(f) = self.frames.last_mut() {
                    f.pending = Some(Pending { path_num: self.path_num, cnt: self.cnt });
                }
                self.path_num = offset;
                self.cnt = 1;
                self.frames.push(Activation {
                    proc: callee,
                    block: BlockId(0),
                    nvc: 1,
                    path_num_on_entry: offset,
                    entered: Entered::Separate(site),
                    pending: None,
                    reentry: None,
                });
            }
            (SiteRole::External, Callee::External, ArcKind::Summary { .. }) => {
                self.path_num = self.add(self.path_num, self.apply(arc.rho, top.nvc)?)?;
                if let Some(f) = self.frames.last_mut() {
                    f.block = info.ret;
                }
            }
            _ => return Err(self.bad("the call site is dead or inconsistent")),
        }
        self.arrive()
    }

    fn ret(&mut self, e: EdgeId) -> Result<(), TraceError> {
        let arc = self.arc_out(e, |k| k == EdgeKind::Return)?;
        let done = self.frames.pop().ok_or_else(|| self.bad("no activation"))?;
        // The caller's call returned: in a forked child, an activation in flight at the fork resumes here.
        self.resume_top();
        self.path_num = self.add(self.path_num, self.apply(arc.rho, done.nvc)?)?;
        let unbalanced_exit = |run: &Run<'_, '_>, target: ExitTarget| -> Result<u128, TraceError> {
            run.num.exit_value(done.proc, target).ok_or_else(|| run.bad("no such Exit_P successor"))
        };
        match done.entered {
            Entered::Root | Entered::Separate(_) => {
                if self.piecewise && self.cnt == 0 {
                    let v = unbalanced_exit(self, ExitTarget::Global)?;
                    self.path_num = self.add(self.path_num, v)?;
                }
                // §5.5 step 7 D / end of main: the path ends Exit_P→Exit_global.
                self.record(self.path_num);
                if let Entered::Separate(site) = done.entered {
                    let info = *self.num.supergraph().program().site(site).ok_or_else(|| self.bad("unknown site"))?;
                    let caller = self.top()?.clone();
                    let pending = caller.pending.ok_or_else(|| self.bad("no pending path"))?;
                    let summary = match self.num.supergraph().dag(caller.proc).cfg_edge_role(info.call_edge) {
                        CfgEdgeRole::Real(d) => self.num.arc_of(caller.proc, d).copied(),
                        _ => None,
                    }
                    .ok_or_else(|| self.bad("summary edge not in G*_fn"))?;
                    // §5.5 step 7 E: resume the pending path with the summary edge c→r.
                    self.path_num = self.add(pending.path_num, self.apply(summary.rho, caller.nvc)?)?;
                    self.cnt = pending.cnt;
                    if let Some(f) = self.frames.last_mut() {
                        f.pending = None;
                        f.block = info.ret;
                    }
                }
            }
            Entered::Call(site) => {
                let info = *self.num.supergraph().program().site(site).ok_or_else(|| self.bad("unknown site"))?;
                let caller_proc = self.top()?.proc;
                let mut caller_nvc = None;
                if self.piecewise {
                    if self.cnt == 0 {
                        // Fig. 17: `pathNum += edgeValue; numValidCompsFromExit = numUnbalRLPaths[Exit_S]`.
                        let v = unbalanced_exit(self, ExitTarget::Site(site))?;
                        self.path_num = self.add(self.path_num, v)?;
                        caller_nvc = Some(self.num.num_unbal_rl_paths(caller_proc));
                    } else {
                        self.cnt -= 1;
                    }
                }
                if let Some(f) = self.frames.last_mut() {
                    f.block = info.ret;
                    if let Some(nvc) = caller_nvc {
                        f.nvc = nvc;
                    }
                }
            }
        }
        self.arrive()
    }

    fn terminate(&mut self, e: EdgeId) -> Result<(), TraceError> {
        let arc = self.arc_out(e, |k| k == EdgeKind::Termination)?;
        let top = self.top()?.clone();
        if self.arrivals {
            // Counted on arrival, with every pending path's call block (a summary site) on its own arrival.
            let impossible = TraceError::ImpossibleTermination { position: self.position };
            if !matches!(super::counted_termination(self.num, top.proc, top.block), Some(t) if t.kind == arc.kind) {
                return Err(impossible);
            }
            for f in self.frames.iter().rev().skip(1) {
                if f.pending.is_some() && super::counted_termination(self.num, f.proc, f.block).is_none() {
                    return Err(impossible);
                }
            }
            self.frames.clear();
            return Ok(());
        }
        let ended = self.add(self.path_num, self.apply(arc.rho, top.nvc)?)?;
        self.record(ended);
        // Flush pending paths, innermost first, through their call blocks' first Termination edge.
        let frames = std::mem::take(&mut self.frames);
        for f in frames.iter().rev().skip(1) {
            let Some(pending) = f.pending else { continue };
            let term =
                self.num.arcs(f.proc, f.block).iter().find(|a| matches!(a.kind, ArcKind::Termination { .. })).copied();
            if let Some(t) = term {
                let n = self.add(pending.path_num, self.apply(t.rho, f.nvc)?)?;
                self.record(n);
            }
        }
        Ok(())
    }
}
