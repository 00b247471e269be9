//! The ψ/ρ numbering of G*_fn ([`Supergraph`]), for context (§5) and piecewise (§6) interprocedural path
//! profiling.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998:
//! - §3.2 builds G*_fn with Transformation 1 (a GExit_P per procedure), Transformation 2 (each intraprocedural
//!   back edge w→v becomes the surrogate edges Entry_P→v and w→GExit_P — exactly the Ball–Larus DAG of
//!   [`PathDag`], whose ENTRY is Entry_P, whose EXIT is Exit_P for `Return` edges and GExit_P for the exit
//!   surrogates) and Transformation 3 (recursive call sites become summary edges; see
//!   [`CallGraph`](super::callgraph::CallGraph));
//! - §6 adds Transformation 0 (a GEntry_P per procedure with Entry_global→GEntry_P) and moves every surrogate
//!   Entry_P→v to GEntry_P→v;
//! - §5.2 solves, procedures callees-first and vertices in reverse topological order, ψ_{Exit_P} = id (19),
//!   ψ_{GExit_P} = λx.1 (20), ψ_c = ψ_{Entry_Q}∘ψ_r for a call vertex (21) and ψ_m = Σ ψ_n otherwise (22);
//!   then ρ_{v→w_i} = Σ_{j<i} ψ_{w_j} (24);
//! - §5.3 (Eq. 27) and §6.1.2 give the Entry_global offsets; §6.1.1 (Eqs. 33, 34) numUnbalRLPaths and §6.1.2
//!   (Eq. 35) the values of return edges taken with no open call.
//!
//! Generalisation used here: every vertex has an ordered list of out-arcs ([`OutArc`]), each with a
//! *completion function* κ (ψ of the target for intraprocedural arcs, ψ_{Entry_Q}∘ψ_r for a call arc, ψ_r for a
//! summary arc, id into Exit_P, λx.1 into GExit_P); ψ_v = Σ κ and ρ_i = Σ_{j<i} κ_j. For ordinary vertices this
//! is Eqs. 22/24, for a call vertex with a single arc it is Eq. 21 — and it also covers call blocks with
//! `Termination` arcs or an entry block that is a call block. The call or summary arc is always first, so the
//! call edge's value is 0 (§5.3). `Termination` edges are treated as surrogates into GExit_P (§9.2.1).
//!
//! Invariant: for every vertex v of every procedure, ψ_v = Σ κ over its arcs and each arc's ρ is the sum of the
//! κ of the arcs before it ([`Numbering::check_invariants`]); the Entry_global offsets are the prefix sums of
//! the entries' path counts. With Theorem 4.1 this makes the numbering of observable paths dense:
//! `0..num_paths()`. All arithmetic is checked `u128`; overflow is [`NumberingError::TooManyPaths`].
//!
//! Successor order (fixed, recorded for the decoder): the call/summary arc first, then the DAG's out-edges in
//! [`PathDag::out_edges`] order (real edges in `EdgeId` order, then surrogates in back-edge order). Entry_global's
//! successors are the roots' Entry_P in procedure order, then (piecewise) every GEntry_P in procedure order —
//! per storage unit ([`super::units`]) when the program is cut into several, one unit after the other.
//! Exit_P's successors (piecewise, no open call) are the return sites of its interprocedural callers in
//! call-site order, then Exit_global if P is a root. This reproduces the paper's Figs. 7 and 15 exactly.

use super::callgraph::SiteRole;
use super::linear::Linear;
use super::program::{CallSiteId, Callee, ProcId};
use super::supergraph::Supergraph;
#[cfg(doc)]
use crate::ball_larus::dag::PathDag;
use crate::ball_larus::dag::{DagEdgeId, DagEdgeKind};
use crate::graph::{BlockId, EdgeId, EdgeKind};

/// Which observable paths are numbered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// §5: unbalanced-left paths of G*_fn — a context-prefix and an active suffix.
    Context,
    /// §6: unbalanced-right-left paths of G*_fn with GEntry vertices — pieces that partition an execution.
    Piecewise,
}

impl Supergraph {
    /// Solves ψ and ρ for `mode` and lays out Entry_global's successors.
    pub fn number(&self, mode: Mode) -> Result<Numbering<'_>, NumberingError> {
        Numbering::compute(self, mode, &[ProcId(0)])
    }

    /// Like [`Supergraph::number`], with the program cut into storage units at `unit_starts` (see
    /// [`super::units`]): each unit's Entry_global successors are laid out together, so that its paths are one
    /// range of numbers. `unit_starts` must begin with procedure 0 and increase; no interprocedural call site may
    /// cross a unit boundary ([`NumberingError::BadUnits`] otherwise).
    pub fn number_in_units(&self, mode: Mode, unit_starts: &[ProcId]) -> Result<Numbering<'_>, NumberingError> {
        Numbering::compute(self, mode, unit_starts)
    }
}

/// What an out-arc of a G*_fn vertex stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArcKind {
    /// The intraprocedural `Branch` edge `edge` to block `to`.
    Branch {
        /// The CFG edge.
        edge: EdgeId,
        /// Its target.
        to: BlockId,
    },
    /// The `Return` edge `edge` into Exit_P (κ = id).
    Return {
        /// The CFG edge.
        edge: EdgeId,
    },
    /// The `Termination` edge `edge`, treated as a surrogate into GExit_P (κ = λx.1): the path ends here.
    Termination {
        /// The CFG edge.
        edge: EdgeId,
    },
    /// The surrogate w→GExit_P of back edge `back` (κ = λx.1): the path ends by taking the back edge.
    BackEdgeExit {
        /// The back edge.
        back: EdgeId,
    },
    /// The surrogate Entry_P→v (context) or GEntry_P→v (piecewise) of back edge `back` = w→v: the path (re)starts
    /// at loop header `to`.
    LoopRestart {
        /// The back edge.
        back: EdgeId,
        /// Its target, the loop header v.
        to: BlockId,
    },
    /// The call edge c→Entry_callee of an interprocedural site (κ = ψ_{Entry_callee}∘ψ_ret); the matching return
    /// edge Exit_callee→ret follows when the callee returns.
    Call {
        /// The call site.
        site: CallSiteId,
        /// The procedure entered.
        callee: ProcId,
        /// The return-site block.
        ret: BlockId,
    },
    /// The summary edge c→ret of a recursive, cut or external site (κ = ψ_ret): the call is not part of the path.
    Summary {
        /// The call site.
        site: CallSiteId,
        /// The return-site block.
        ret: BlockId,
    },
}

/// One out-arc of a G*_fn vertex, in the vertex's recorded successor order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct OutArc {
    /// The DAG edge it comes from (for call and summary arcs: the `Real` edge c→r).
    pub dag_edge: DagEdgeId,
    /// What it stands for.
    pub kind: ArcKind,
    /// κ: maps numValidComps from Exit_P to the number of completions through this arc.
    pub completions: Linear,
    /// ρ (Eq. 24): maps numValidComps from Exit_P to edgeValueInContext of this arc.
    pub rho: Linear,
}

/// A successor of Entry_global.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// Entry_global→Entry_P of root P: the path starts at P's entry with "(_P" open.
    Root(ProcId),
    /// Entry_global→GEntry_P (piecewise only): the path starts at a loop header of P, callers unknown.
    Mid(ProcId),
}

impl EntryKind {
    /// The procedure the path starts in.
    pub fn proc(self) -> ProcId {
        match self {
            EntryKind::Root(p) | EntryKind::Mid(p) => p,
        }
    }
}

/// One storage unit of a [`Numbering`]: procedures `procs` and the path numbers
/// `first_path..first_path + num_paths` of the paths that start in them (and never leave them).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Unit {
    /// Its procedures, by index.
    pub procs: std::ops::Range<usize>,
    /// The first path number of the unit (the sum of the earlier units' paths).
    pub first_path: u128,
    /// How many paths start in the unit.
    pub num_paths: u128,
}

/// One successor of Entry_global with its range of path numbers `offset..offset + count`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GlobalEntry {
    /// Which edge.
    pub kind: EntryKind,
    /// edgeValueInContext(\[ε:Entry_global\], edge), Eq. 27 (prefix sum of the counts before it).
    pub offset: u128,
    /// numValidComps(Entry_global→…): ψ_{Entry_P}(1), or ψ_{GEntry_P}(numUnbalRLPaths\[Exit_P\]).
    pub count: u128,
}

/// A successor of Exit_P for a path with no open call (piecewise).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExitTarget {
    /// The return site of this interprocedural call site.
    Site(CallSiteId),
    /// Exit_global (P is a root).
    Global,
}

/// One successor of Exit_P with its Eq. 35 edge value (piecewise).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExitSucc {
    /// Where the return goes.
    pub target: ExitTarget,
    /// edgeValue\[Exit_P→target\] (Eq. 35).
    pub value: u128,
    /// numUnbalRLPaths\[target\] (Eq. 34): ψ_r(numUnbalRLPaths\[Exit_S\]), or 1 for Exit_global.
    pub count: u128,
}

/// Why ψ/ρ could not be solved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NumberingError {
    /// A path count does not fit in a `u128` (Melski & Reps fn. 7: cut more call sites, §8).
    #[error("the number of interprocedural paths overflows 128 bits (at {proc}, {at})")]
    TooManyPaths {
        /// The procedure being solved.
        proc: ProcId,
        /// Where: a block, or a description of the global quantity.
        at: String,
    },
    /// The unit starts do not begin at procedure 0, do not increase, lie outside the program, or an
    /// interprocedural call site crosses from one unit into another.
    #[error("bad storage units of an interprocedural program: {0}")]
    BadUnits(String),
    /// An internal ordering assumption failed; a pathprof bug, not bad input.
    #[error("internal error in the interprocedural numbering: {0}")]
    Internal(&'static str),
}

/// A violated invariant found by [`Numbering::check_invariants`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("interprocedural numbering invariant violated: {0}")]
pub struct InvariantViolation(pub String);

/// Where an out-arc lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ArcLoc {
    Vertex(BlockId, usize),
    GEntry(usize),
}

#[derive(Clone, Debug)]
struct ProcNumbering {
    arcs: Vec<Vec<OutArc>>,
    gentry: Vec<OutArc>,
    psi: Vec<Linear>,
    psi_gentry: Linear,
    locate: Vec<Option<ArcLoc>>,
}

/// ψ, ρ and the Entry_global/Exit_P edge values of one [`Mode`] for a [`Supergraph`].
#[derive(Clone, Debug)]
pub struct Numbering<'a> {
    sg: &'a Supergraph,
    mode: Mode,
    procs: Vec<ProcNumbering>,
    entries: Vec<GlobalEntry>,
    root_entry: Vec<Option<usize>>,
    mid_entry: Vec<Option<usize>>,
    total: u128,
    unbal: Vec<u128>,
    exit_succs: Vec<Vec<ExitSucc>>,
    units: Vec<Unit>,
    unit_of: Vec<usize>,
}

fn overflow(proc: ProcId, at: impl Into<String>) -> NumberingError {
    NumberingError::TooManyPaths { proc, at: at.into() }
}

impl<'a> Numbering<'a> {
    /// Solves the numbering of `mode` for `sg` (see the module docs).
    pub fn compute(sg: &'a Supergraph, mode: Mode, unit_starts: &[ProcId]) -> Result<Numbering<'a>, NumberingError> {
        let program = &sg.program();
        let n = program.num_procs();
        let unit_of = super::units::check_unit_starts(sg, unit_starts)?;
        let mut procs: Vec<Option<ProcNumbering>> = vec![None; n];
        for &p in sg.calls().callee_first() {
            let pn = solve_proc(sg, mode, p, &procs)?;
            procs[p.index()] = Some(pn);
        }
        let procs: Vec<ProcNumbering> =
            procs.into_iter().collect::<Option<_>>().ok_or(NumberingError::Internal("procedure not solved"))?;

        // numUnbalRLPaths[Exit_P] and Eq. 35, callers first (piecewise only).
        let mut unbal = vec![0u128; n];
        let mut exit_succs = vec![Vec::new(); n];
        if mode == Mode::Piecewise {
            let mut done = vec![false; n];
            for &p in sg.calls().callee_first().iter().rev() {
                let mut running = 0u128;
                let mut succs = Vec::new();
                for &s in sg.calls().callers(p) {
                    let info = program.site(s).ok_or(NumberingError::Internal("unknown site"))?;
                    if !done[info.proc.index()] {
                        return Err(NumberingError::Internal("caller not solved before callee"));
                    }
                    let psi_r = procs[info.proc.index()].psi[info.ret.index()];
                    let count = psi_r
                        .checked_apply(unbal[info.proc.index()])
                        .ok_or_else(|| overflow(p, format!("numUnbalRLPaths of the return site of {s}")))?;
                    succs.push(ExitSucc { target: ExitTarget::Site(s), value: running, count });
                    running = running.checked_add(count).ok_or_else(|| overflow(p, "numUnbalRLPaths[Exit_P]"))?;
                }
                if sg.calls().is_root(p) {
                    succs.push(ExitSucc { target: ExitTarget::Global, value: running, count: 1 });
                    running = running.checked_add(1).ok_or_else(|| overflow(p, "numUnbalRLPaths[Exit_P]"))?;
                }
                unbal[p.index()] = running;
                exit_succs[p.index()] = succs;
                done[p.index()] = true;
            }
        }

        // Entry_global's successors (Eq. 27 / §6.1.2), unit by unit: a unit's roots, then (piecewise) its GEntry_P,
        // each in procedure order — one unit is the paper's order.
        let mut entries: Vec<GlobalEntry> = Vec::new();
        let mut root_entry = vec![None; n];
        let mut mid_entry = vec![None; n];
        let mut units = Vec::with_capacity(unit_starts.len());
        let mut total = 0u128;
        for (u, start) in unit_starts.iter().enumerate() {
            let range = start.index()..unit_starts.get(u + 1).map_or(n, |s| s.index());
            let first_path = total;
            let mut push = |kind: EntryKind, count: u128, p: ProcId| -> Result<Option<usize>, NumberingError> {
                entries.push(GlobalEntry { kind, offset: total, count });
                total = total.checked_add(count).ok_or_else(|| overflow(p, "numValidComps([ε:Entry_global])"))?;
                Ok(Some(entries.len() - 1))
            };
            // Roots are in id order: the unit's are one slice of them.
            let roots = sg.calls().roots();
            let slice =
                roots.partition_point(|r| r.index() < range.start)..roots.partition_point(|r| r.index() < range.end);
            for &r in &roots[slice] {
                let count = procs[r.index()].psi[0].checked_apply(1).ok_or_else(|| overflow(r, "ψ_Entry(1)"))?;
                root_entry[r.index()] = push(EntryKind::Root(r), count, r)?;
            }
            if mode == Mode::Piecewise {
                for p in range.clone().map(|i| ProcId(i as u32)) {
                    let count = procs[p.index()]
                        .psi_gentry
                        .checked_apply(unbal[p.index()])
                        .ok_or_else(|| overflow(p, "ψ_GEntry(numUnbalRLPaths[Exit_P])"))?;
                    mid_entry[p.index()] = push(EntryKind::Mid(p), count, p)?;
                }
            }
            units.push(Unit { procs: range, first_path, num_paths: total - first_path });
        }
        Ok(Numbering { sg, mode, procs, entries, root_entry, mid_entry, total, unbal, exit_succs, units, unit_of })
    }

    /// The supergraph this numbering belongs to.
    pub fn supergraph(&self) -> &'a Supergraph {
        self.sg
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// numValidComps(\[ε:Entry_global\]): the number of observable paths; path numbers are `0..num_paths()`.
    pub fn num_paths(&self) -> u128 {
        self.total
    }

    /// Entry_global's successors in order, with their ranges of path numbers.
    pub fn entries(&self) -> &[GlobalEntry] {
        &self.entries
    }

    /// The storage units, in order: their procedures and ranges of path numbers partition the program's.
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// The unit holding procedure `p` (0 for ids outside the program).
    pub fn unit_of(&self, p: ProcId) -> usize {
        self.unit_of.get(p.index()).copied().unwrap_or(0)
    }

    /// `e`'s offset within its unit: the number the instrumented program starts a path at (each unit counts in
    /// storage of its own, indexed from 0).
    pub fn local_offset(&self, e: &GlobalEntry) -> u128 {
        e.offset - self.units.get(self.unit_of(e.kind.proc())).map_or(0, |u| u.first_path)
    }

    /// The Entry_global→Entry_P entry of root `p` (`None` if `p` is not a root).
    pub fn root_entry(&self, p: ProcId) -> Option<&GlobalEntry> {
        self.entries.get(self.root_entry.get(p.index()).copied().flatten()?)
    }

    /// The Entry_global→GEntry_P entry of `p` (piecewise only).
    pub fn mid_entry(&self, p: ProcId) -> Option<&GlobalEntry> {
        self.entries.get(self.mid_entry.get(p.index()).copied().flatten()?)
    }

    /// ψ_v of block `b` of `p` (ψ_{Exit_P} = id for the EXIT vertex; ⟨0,0⟩ for unreachable blocks and ids out
    /// of range).
    pub fn psi(&self, p: ProcId, b: BlockId) -> Linear {
        self.procs.get(p.index()).and_then(|q| q.psi.get(b.index())).copied().unwrap_or(Linear::ZERO)
    }

    /// ψ of GEntry_P (piecewise; ⟨0,0⟩ in context mode).
    pub fn psi_gentry(&self, p: ProcId) -> Linear {
        self.procs.get(p.index()).map_or(Linear::ZERO, |q| q.psi_gentry)
    }

    /// The out-arcs of block `b` of `p` in successor order (empty for EXIT, unreachable blocks, bad ids).
    pub fn arcs(&self, p: ProcId, b: BlockId) -> &[OutArc] {
        self.procs.get(p.index()).and_then(|q| q.arcs.get(b.index())).map_or(&[], Vec::as_slice)
    }

    /// The out-arcs of GEntry_P (piecewise: the loop-restart surrogates; empty in context mode).
    pub fn gentry_arcs(&self, p: ProcId) -> &[OutArc] {
        self.procs.get(p.index()).map_or(&[], |q| q.gentry.as_slice())
    }

    /// The out-arc that DAG edge `d` of `p` became (`None` for the EXIT→ENTRY edge and bad ids).
    pub fn arc_of(&self, p: ProcId, d: DagEdgeId) -> Option<&OutArc> {
        let q = self.procs.get(p.index())?;
        match (*q.locate.get(d.index())?)? {
            ArcLoc::Vertex(b, i) => q.arcs.get(b.index())?.get(i),
            ArcLoc::GEntry(i) => q.gentry.get(i),
        }
    }

    /// numUnbalRLPaths\[Exit_P\] (Eq. 33; piecewise, 0 in context mode).
    pub fn num_unbal_rl_paths(&self, p: ProcId) -> u128 {
        self.unbal.get(p.index()).copied().unwrap_or(0)
    }

    /// Exit_P's successors for a path with no open call, with Eq. 35 values (piecewise; empty in context mode).
    pub fn exit_successors(&self, p: ProcId) -> &[ExitSucc] {
        self.exit_succs.get(p.index()).map_or(&[], Vec::as_slice)
    }

    /// edgeValue\[Exit_P→target\] of Eq. 35 (piecewise), `None` if `target` is not a successor of Exit_P.
    pub fn exit_value(&self, p: ProcId, target: ExitTarget) -> Option<u128> {
        self.exit_successors(p).iter().find(|s| s.target == target).map(|s| s.value)
    }

    /// Checks the numbering's defining equations (module docs): ψ = Σ κ, ρ = prefix sums of κ, κ matches the arc
    /// kind, entry offsets are prefix sums, and Eq. 33–35 for piecewise Exit_P successors.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        let bad = |m: String| Err(InvariantViolation(m));
        for p in self.sg.program().proc_ids() {
            let dag = self.sg.dag(p);
            let q = &self.procs[p.index()];
            let lists =
                dag.topological_order().iter().map(|&v| (Some(v), &q.arcs[v.index()])).chain([(None, &q.gentry)]);
            for (v, arcs) in lists {
                let mut running = Linear::ZERO;
                for (i, arc) in arcs.iter().enumerate() {
                    if arc.rho != running {
                        return bad(format!("{p} {v:?} arc {i}: ρ {} != {}", arc.rho, running));
                    }
                    let expected = match kappa(arc.kind, &q.psi, |c| self.procs.get(c.index())) {
                        Some(k) => k,
                        None => return bad(format!("{p} {v:?} arc {i}: κ not computable")),
                    };
                    if expected != arc.completions {
                        return bad(format!("{p} {v:?} arc {i}: κ {} != {}", arc.completions, expected));
                    }
                    running = match running.checked_add(arc.completions) {
                        Some(r) => r,
                        None => return bad(format!("{p} {v:?}: overflow")),
                    };
                }
                let psi = match v {
                    Some(v) if v == dag.exit() => Linear::IDENTITY,
                    Some(v) => q.psi[v.index()],
                    None => q.psi_gentry,
                };
                if v != Some(dag.exit()) && psi != running {
                    return bad(format!("{p} {v:?}: ψ {psi} != Σκ {running}"));
                }
            }
            if self.mode == Mode::Piecewise {
                let mut running = 0u128;
                for s in self.exit_successors(p) {
                    if s.value != running {
                        return bad(format!("{p}: Exit successor value {} != {running}", s.value));
                    }
                    running = match running.checked_add(s.count) {
                        Some(r) => r,
                        None => return bad(format!("{p}: overflow")),
                    };
                }
                if running != self.unbal[p.index()] {
                    return bad(format!("{p}: numUnbalRLPaths {} != {running}", self.unbal[p.index()]));
                }
            }
        }
        let mut running = 0u128;
        for e in &self.entries {
            if e.offset != running {
                return bad(format!("entry {:?}: offset {} != {running}", e.kind, e.offset));
            }
            running = match running.checked_add(e.count) {
                Some(r) => r,
                None => return bad("entry overflow".to_string()),
            };
        }
        if running != self.total {
            return bad(format!("total {} != {running}", self.total));
        }
        let mut first = 0u128;
        for (u, unit) in self.units.iter().enumerate() {
            let outside = |e: &GlobalEntry| {
                e.offset < first || (e.offset - first).checked_add(e.count).is_none_or(|end| end > unit.num_paths)
            };
            let mut inside = self.entries.iter().filter(|e| self.unit_of(e.kind.proc()) == u);
            if unit.first_path != first || inside.any(outside) {
                return bad(format!("unit {u}: entries outside {first}..+{}", unit.num_paths));
            }
            first += unit.num_paths;
        }
        Ok(())
    }
}

/// κ of an arc: ψ of the procedure's own vertices in `psi`, callee entries through `proc_of`.
fn kappa<'p>(kind: ArcKind, psi: &[Linear], proc_of: impl Fn(ProcId) -> Option<&'p ProcNumbering>) -> Option<Linear> {
    Some(match kind {
        ArcKind::Branch { to, .. } | ArcKind::LoopRestart { to, .. } => *psi.get(to.index())?,
        ArcKind::Summary { ret, .. } => *psi.get(ret.index())?,
        ArcKind::Return { .. } => Linear::IDENTITY,
        ArcKind::Termination { .. } | ArcKind::BackEdgeExit { .. } => Linear::ONE,
        ArcKind::Call { callee, ret, .. } => {
            let entry = *proc_of(callee)?.psi.first()?;
            entry.checked_compose(*psi.get(ret.index())?)?
        }
    })
}

/// Solves ψ/ρ of procedure `p` (callees already solved in `solved`).
fn solve_proc(
    sg: &Supergraph,
    mode: Mode,
    p: ProcId,
    solved: &[Option<ProcNumbering>],
) -> Result<ProcNumbering, NumberingError> {
    let program = &sg.program();
    let cfg = program.cfg(p);
    let dag = sg.dag(p);
    let nv = dag.num_vertices();
    let exit = dag.exit();
    let mut psi = vec![Linear::ZERO; nv];
    let mut done = vec![false; nv];
    let mut arcs: Vec<Vec<OutArc>> = vec![Vec::new(); nv];
    let mut gentry_kinds: Vec<(DagEdgeId, ArcKind)> = Vec::new();
    let proc_of = |c: ProcId| solved.get(c.index()).and_then(Option::as_ref);

    for &v in dag.topological_order().iter().rev() {
        if v == exit {
            psi[v.index()] = Linear::IDENTITY;
            done[v.index()] = true;
            continue;
        }
        let site = program.site_at(p, v).and_then(|s| program.site(s).map(|i| (s, *i)));
        let mut kinds: Vec<(DagEdgeId, ArcKind)> = Vec::new();
        for &d in dag.out_edges(v) {
            let de = dag.edge(d);
            let kind = match de.kind {
                DagEdgeKind::Real(e) => match cfg.edge(e).kind {
                    EdgeKind::Branch { .. } => match site {
                        Some((s, info)) if info.call_edge == e => {
                            let kind = match (sg.calls().role(s), info.callee) {
                                (SiteRole::Interprocedural, Callee::Proc(callee)) => {
                                    ArcKind::Call { site: s, callee, ret: info.ret }
                                }
                                _ => ArcKind::Summary { site: s, ret: info.ret },
                            };
                            // The call or summary arc goes first, so the call edge's value is 0 (§5.3).
                            kinds.insert(0, (d, kind));
                            continue;
                        }
                        _ => ArcKind::Branch { edge: e, to: de.to },
                    },
                    EdgeKind::Return => ArcKind::Return { edge: e },
                    EdgeKind::Termination => ArcKind::Termination { edge: e },
                    EdgeKind::ExitToEntry => return Err(NumberingError::Internal("EXIT->entry as a path edge")),
                },
                // A cut edge (a procedure's cut vertex) ends and restarts paths exactly like a back edge.
                DagEdgeKind::ExitSurrogate { back } | DagEdgeKind::SplitExit { edge: back } => {
                    ArcKind::BackEdgeExit { back }
                }
                DagEdgeKind::EntrySurrogate { back } | DagEdgeKind::SplitEntry { edge: back } => {
                    let kind = ArcKind::LoopRestart { back, to: de.to };
                    if mode == Mode::Piecewise {
                        gentry_kinds.push((d, kind));
                        continue;
                    }
                    kind
                }
                DagEdgeKind::ExitToEntry => return Err(NumberingError::Internal("unexpected DAG edge kind")),
            };
            kinds.push((d, kind));
        }
        let (list, sum) = number_arcs(p, &kinds, &psi, &done, proc_of, v)?;
        arcs[v.index()] = list;
        psi[v.index()] = sum;
        done[v.index()] = true;
    }
    let (gentry, psi_gentry) = number_arcs(p, &gentry_kinds, &psi, &done, proc_of, dag.entry())?;

    let mut locate = vec![None; dag.num_edges()];
    for (b, list) in arcs.iter().enumerate() {
        for (i, a) in list.iter().enumerate() {
            locate[a.dag_edge.index()] = Some(ArcLoc::Vertex(BlockId::from_index(b), i));
        }
    }
    for (i, a) in gentry.iter().enumerate() {
        locate[a.dag_edge.index()] = Some(ArcLoc::GEntry(i));
    }
    Ok(ProcNumbering { arcs, gentry, psi, psi_gentry, locate })
}

/// κ and ρ (Eq. 24) for an ordered arc list; returns the arcs and ψ = Σ κ.
fn number_arcs<'p>(
    p: ProcId,
    kinds: &[(DagEdgeId, ArcKind)],
    psi: &[Linear],
    done: &[bool],
    proc_of: impl Fn(ProcId) -> Option<&'p ProcNumbering> + Copy,
    v: BlockId,
) -> Result<(Vec<OutArc>, Linear), NumberingError> {
    let mut running = Linear::ZERO;
    let mut list = Vec::with_capacity(kinds.len());
    for &(dag_edge, kind) in kinds {
        let target_done = match kind {
            ArcKind::Branch { to, .. } | ArcKind::LoopRestart { to, .. } => done[to.index()],
            ArcKind::Summary { ret, .. } | ArcKind::Call { ret, .. } => done[ret.index()],
            _ => true,
        };
        if !target_done {
            return Err(NumberingError::Internal("successor visited after its predecessor"));
        }
        if let ArcKind::Call { callee, .. } = kind {
            if proc_of(callee).is_none() {
                return Err(NumberingError::Internal("callee solved after its caller"));
            }
        }
        let completions = kappa(kind, psi, proc_of).ok_or_else(|| overflow(p, format!("{v}")))?;
        list.push(OutArc { dag_edge, kind, completions, rho: running });
        running = running.checked_add(completions).ok_or_else(|| overflow(p, format!("{v}")))?;
    }
    Ok((list, running))
}
