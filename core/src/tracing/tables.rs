//! Per-function regeneration tables: one dense row of transitions per vertex, indexed by the pending witness.
//!
//! The thesis's regenerator (Figure 3.12) asks at each predicate p "which successor q has the current witness
//! in witness(p, q)". The sets are computed once here: for a predicate, the row covers the window `lo..lo+len`
//! of witness values that occur in any of its out-edges' sets and maps each to its out-edge, so a step is one
//! subtraction, one bounds check and one load. Rows are dense `Vec`s of `Copy` entries indexed by typed ids —
//! no hashing, no pointers — because regeneration aims at hundreds of millions of blocks per second.
//! Memory is Σ over predicates of their window, at most (#predicates) × (#witness values + 1); witness values
//! follow `EdgeId` order, which follows block order, so windows are usually short.

use super::check::{check_blocking_of, TraceViolation, WitnessOf, WitnessSets};
use super::placement::{token_width, WitnessPlan};
use super::runs::{RunStep, Runs};
use super::view::{CallSites, TracingView};
use crate::graph::{BlockId, Cfg, EdgeId};

/// No witness (pending slot empty, or an edge that writes none).
pub(crate) const NONE: u32 = u32::MAX;

/// The vertex is a predicate: its row is indexed by the witness.
pub(crate) const PRED: u8 = 1;
/// The walk leaves the fast path here: EXIT, a call site, or no way out.
pub(crate) const SPECIAL: u8 = 2;
/// The vertex is plain: [`VertexEntry`] describes its straight run ([`super::runs`]).
pub(crate) const RUN: u8 = 4;

/// One vertex's row; for a plain vertex ([`RUN`]), its straight run: `lo` its start in [`FuncTables::runs`],
/// `len` its steps, `row` the block it ends at.
#[derive(Copy, Clone, Debug)]
pub(crate) struct VertexEntry {
    /// First transition of the row in [`FuncTables::trans`].
    pub(crate) row: u32,
    /// Witness value of the row's first entry (predicates); the start of the vertex's straight run ([`RUN`]).
    pub(crate) lo: u32,
    /// Entries in the row (0: no traced out-edge).
    pub(crate) len: u32,
    /// Bits of a witness token read here.
    pub(crate) width: u8,
    /// [`PRED`] | [`SPECIAL`].
    pub(crate) kind: u8,
}

/// One step: cross `edge` to `target`; `witness` is the value the edge writes ([`NONE`] if none). An entry
/// with `target == NONE` is a hole in a predicate's window (a corrupt trace). When the target is plain, its
/// straight run follows right away: `run` (its start in [`FuncTables::runs`]; [`NONE`] otherwise), `run_len`
/// and the block it ends at, `after` — the walk goes on from there without looking the target up.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Transition {
    pub(crate) target: BlockId,
    pub(crate) edge: EdgeId,
    pub(crate) witness: u32,
    pub(crate) run: u32,
    pub(crate) run_len: u32,
    pub(crate) after: BlockId,
}

impl Transition {
    fn new(target: BlockId, edge: EdgeId, witness: u32) -> Transition {
        Transition { target, edge, witness, run: NONE, run_len: 0, after: target }
    }
}

/// Why a function's tables could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TablesError {
    /// The placement does not solve Trace, or leaves a witness pending at a call.
    #[error(transparent)]
    Placement(#[from] TraceViolation),
    /// The tables would not fit 32-bit indices.
    #[error("regeneration tables too large")]
    TooLarge,
}

/// Everything the encoder and the regenerator need to know about one traced function.
#[derive(Clone, Debug)]
pub struct FuncTables {
    pub(crate) verts: Vec<VertexEntry>,
    pub(crate) trans: Vec<Transition>,
    /// The straight runs' sequences ([`super::runs`]).
    pub(crate) runs: Vec<RunStep>,
    pub(crate) calls: Vec<u32>,
    /// Per vertex: the index of its first call site in [`FuncTables::direct`] (call sites numbered in block
    /// order).
    pub(crate) site_base: Vec<u32>,
    /// Per call site: the traced function it calls directly ([`NONE`]: an indirect call, or a callee the
    /// writer does not announce), whose entry there costs one bit ([`super::regenerate`], "Direct calls").
    pub(crate) direct: Vec<u32>,
    /// Per call site: its direct callee is *implicit* there ([`super::regenerate`], "Implicit calls"): the
    /// writer calls a marker-free copy and writes nothing for the call.
    pub(crate) implicit: Vec<bool>,
    /// Per vertex: the unwind edge of the `invoke` that ends it ([`NONE`]: none).
    pub(crate) unwind: Vec<u32>,
    /// Some vertex has an unwind edge ([`FuncTables::may_resume`]).
    may_resume: bool,
    /// An activation may end in a tail call ([`FuncTables::with_tail_calls`]).
    tail_calls: bool,
    /// The writer's number of the function's first call site ([`FuncTables::with_first_site`]; [`NONE`]:
    /// unknown).
    first_site: u32,
    /// Value each edge writes ([`NONE`] if none), and its source, for the encoder.
    pub(crate) edge_witness: Vec<u32>,
    pub(crate) edge_from: Vec<BlockId>,
    pub(crate) edge_to: Vec<BlockId>,
    pub(crate) edge_traced: Vec<bool>,
    /// Placed by bit tracing (witness value = out-edge position), which entropy coding needs.
    pub(crate) bit_tracing: bool,
    pub(crate) entry: BlockId,
    pub(crate) exit: BlockId,
    /// The EOF value returns write ([`NONE`]: returns write nothing).
    pub(crate) eof: u32,
    /// Predicates (≥ 2 traced out-edges), for entropy models.
    pub(crate) out_degree: Vec<u32>,
    /// A placeholder for an id no function has ([`FuncTables::unclaimed`]).
    pub(crate) unclaimed: bool,
}

impl FuncTables {
    /// Tables for `cfg` traced with `plan`. Refuses a plan that does not solve Trace(Ewit) or that leaves a
    /// predicate a witness-free path to a call (the callee's trace would come between a witness and the
    /// predicate that needs it); a witness-free path to EXIT is allowed, and then every return writes EOF.
    pub fn build(cfg: &Cfg, calls: &CallSites, plan: &WitnessPlan) -> Result<FuncTables, TablesError> {
        let view = TracingView::new(cfg, calls);
        check_blocking_of(cfg, &view, plan, false)?;
        let sets = WitnessSets::compute(cfg, &view, plan);
        if let Some(v) = sets.first_overlap(cfg, &view) {
            return Err(v.into());
        }
        let eof = if sets.needs_eof(cfg, &view) { plan.num_values() } else { NONE };
        let value_of = |w: WitnessOf| match w {
            WitnessOf::Edge(e) => plan.value(e).expect("a witnessed edge"),
            WitnessOf::Eof => eof,
        };
        let mut verts = Vec::with_capacity(cfg.num_vertices());
        let mut trans: Vec<Transition> = Vec::new();
        let hole = Transition::new(BlockId(NONE), EdgeId(NONE), NONE);
        for v in cfg.vertices() {
            let outs = view.out_edges(v);
            let step = |e: EdgeId| Transition::new(cfg.edge(e).to, e, plan.value(e).unwrap_or(NONE));
            let row = u32::try_from(trans.len()).map_err(|_| TablesError::TooLarge)?;
            let width = token_width(plan, &view, v, eof != NONE);
            let special = v == cfg.exit() || calls.count(v) > 0 || outs.is_empty();
            let mut kind = if special { SPECIAL } else { 0 };
            let (lo, len) = if outs.len() == 1 {
                trans.push(step(outs[0]));
                (0, 1)
            } else if outs.is_empty() {
                (0, 0)
            } else {
                kind |= PRED;
                let members: Vec<Vec<u32>> =
                    outs.iter().map(|&e| sets.of_edge(cfg, e).into_iter().map(value_of).collect()).collect();
                let all = members.iter().flatten();
                let (lo, hi) = all.fold((u32::MAX, 0), |(lo, hi), &w| (lo.min(w), hi.max(w)));
                if lo > hi {
                    (0, 0) // no way out of any successor (only in graphs where nothing reaches EXIT)
                } else {
                    let len = hi - lo + 1;
                    let base = trans.len();
                    trans.resize(base + len as usize, hole);
                    for (&e, ws) in outs.iter().zip(&members) {
                        for &w in ws {
                            trans[base + (w - lo) as usize] = step(e);
                        }
                    }
                    (lo, len)
                }
            };
            verts.push(VertexEntry { row, lo, len, width, kind });
        }
        if u32::try_from(trans.len()).is_err() {
            return Err(TablesError::TooLarge);
        }
        let mut in_degree = vec![0u32; cfg.num_vertices()];
        for v in cfg.vertices() {
            for &e in view.out_edges(v) {
                in_degree[cfg.edge(e).to.index()] += 1;
            }
        }
        let plain = |v: BlockId| {
            let ve = &verts[v.index()];
            let tr = trans.get(ve.row as usize).filter(|_| ve.kind == 0 && ve.len == 1)?;
            (tr.witness == NONE).then_some((tr.edge, tr.target))
        };
        let runs = Runs::compute(&in_degree, &plain);
        // A run's length and end, right in the vertex and in the transitions into it: a run costs the walk one
        // dependent load, not one per block.
        let run_of = |v: BlockId| {
            let p = (*runs.start.get(v.index())?)?;
            let len = runs.steps[p as usize].left;
            Some((p, len, runs.steps[(p + len - 1) as usize].target))
        };
        for tr in &mut trans {
            if let Some((p, len, end)) = run_of(tr.target) {
                (tr.run, tr.run_len, tr.after) = (p, len, end);
            }
        }
        for (v, ve) in verts.iter_mut().enumerate() {
            if let Some((p, len, end)) = run_of(BlockId(v as u32)) {
                *ve = VertexEntry { row: end.0, lo: p, len, width: ve.width, kind: ve.kind | RUN };
            }
        }
        let counts: Vec<u32> = cfg.vertices().map(|v| calls.count(v)).collect();
        let mut site_base = Vec::with_capacity(counts.len());
        let mut sites = 0u32;
        for &n in &counts {
            site_base.push(sites);
            sites = sites.checked_add(n).ok_or(TablesError::TooLarge)?;
        }
        let unwind: Vec<u32> = cfg
            .vertices()
            .map(|v| {
                let mut outs = cfg.edge_ids().filter(|&e| cfg.edge(e).from == v && calls.is_unwind(cfg, e));
                outs.next().map_or(NONE, |e| e.0)
            })
            .collect();
        Ok(FuncTables {
            may_resume: unwind.iter().any(|&e| e != NONE),
            tail_calls: false,
            first_site: NONE,
            verts,
            trans,
            runs: runs.steps,
            calls: counts,
            site_base,
            direct: vec![NONE; sites as usize],
            implicit: vec![false; sites as usize],
            unwind,
            edge_witness: cfg.edge_ids().map(|e| plan.value(e).unwrap_or(NONE)).collect(),
            edge_from: cfg.edges().iter().map(|e| e.from).collect(),
            edge_to: cfg.edges().iter().map(|e| e.to).collect(),
            edge_traced: cfg
                .edge_ids()
                .map(|e| super::view::is_traced(cfg.edge(e).kind) && !calls.is_unwind(cfg, e))
                .collect(),
            bit_tracing: plan.scheme() == super::placement::Scheme::BitTracing,
            entry: cfg.entry(),
            exit: cfg.exit(),
            eof,
            out_degree: cfg.vertices().map(|v| view.out_edges(v).len() as u32).collect(),
            unclaimed: false,
        })
    }

    /// The same tables with direct callees: `callee` is called directly at call site `call` of `block` (the
    /// writer announces it there, so its entry costs one bit). Refuses a call site the function does not have.
    pub fn with_direct_callees(
        mut self,
        sites: impl IntoIterator<Item = (BlockId, u32, FuncId)>,
    ) -> Result<FuncTables, NoSuchSite> {
        for (block, call, callee) in sites {
            match self.calls.get(block.index()) {
                Some(&n) if call < n && callee.0 != NONE => {
                    self.direct[(self.site_base[block.index()] + call) as usize] = callee.0;
                }
                _ => return Err(NoSuchSite { block, call }),
            }
        }
        Ok(self)
    }

    /// The same tables with implicit calls at `sites` (block, call index), each a direct call site whose callee
    /// surely runs there exactly once: the writer writes no `Enter` and no `Done` there, and the reader begins
    /// the callee's activation without reading ([`super::regenerate`], "Implicit calls"). Refuses a site that
    /// is no direct call site.
    pub fn with_implicit_sites(
        mut self,
        sites: impl IntoIterator<Item = (BlockId, u32)>,
    ) -> Result<FuncTables, NoSuchSite> {
        for (block, call) in sites {
            if self.direct_callee(block, call).is_none() {
                return Err(NoSuchSite { block, call });
            }
            self.implicit[(self.site_base[block.index()] + call) as usize] = true;
        }
        Ok(self)
    }

    /// The callee of call site `call` of `v` if the call is implicit there.
    #[inline]
    pub fn implicit_callee(&self, v: BlockId, call: u32) -> Option<FuncId> {
        let i = *self.site_base.get(v.index())? as usize + call as usize;
        if self.implicit.get(i).copied().unwrap_or(false) {
            self.direct_callee(v, call)
        } else {
            None
        }
    }

    /// Whether an activation writes nothing at all: no call sites, no decision, no EOF, no tail call — a
    /// function whose entry determines its whole path (a straight-line leaf), which can be called implicitly.
    pub fn is_marker_free(&self) -> bool {
        !self.tail_calls
            && self.calls.iter().all(|&n| n == 0)
            && self.verts.iter().all(|v| v.kind & PRED == 0)
            && self.eof == NONE
            && self.edge_witness.iter().all(|&w| w == NONE)
    }

    /// The same tables as a placeholder that fills an id no function has (a program indexed by trace ids
    /// with a gap): [`Program::func`] gives `None` for it, so an activation of the id is
    /// [`super::RegenError::UnknownFunction`], not a regenerated block of a function that does not exist.
    pub fn unclaimed(mut self) -> FuncTables {
        self.unclaimed = true;
        self
    }

    /// The same tables with the writer's number of the function's first call site: sites are numbered from 1
    /// over a module's functions, blocks and calls in order (`pathprof_format::trace_layout::site_number`), so
    /// the reader can check that an abandon marker names the call site its activation waits at.
    pub fn with_first_site(mut self, first: u32) -> FuncTables {
        self.first_site = first;
        self
    }

    /// The writer's number of call site `call` of `v` (31 bits, as call-site states carry it), if known.
    pub(crate) fn site_number(&self, v: BlockId, call: u32) -> Option<u32> {
        (self.first_site != NONE)
            .then(|| self.first_site.wrapping_add(self.site_base[v.index()]).wrapping_add(call) & 0x7fff_ffff)
    }

    /// Whether an activation may end with `resume` (it has a landing pad: an `invoke`), which the reader takes
    /// for a return although the exception goes on. A direct call's Done follows from the announced callee's
    /// return only for a callee that cannot ([`super::regenerate`], "Direct calls").
    #[inline]
    pub fn may_resume(&self) -> bool {
        self.may_resume
    }

    /// The same tables for a function whose activations may end in a tail call (a `musttail` call right before
    /// a `ret`): the activation ends there — the walk takes the block's return edge — and the callee's
    /// activation, if it is traced, follows at the caller's call site like a callback of an untraced callee.
    /// So such a function never binds the site that announced it ([`FuncTables::binds_its_site`]) and is never
    /// called implicitly ([`FuncTables::is_marker_free`]).
    pub fn with_tail_calls(mut self, tail_calls: bool) -> FuncTables {
        self.tail_calls = tail_calls;
        self
    }

    /// Whether the function's announced activation at a direct call site is the only one there, so that its
    /// return ends the site and the site's Done is implied ([`super::regenerate`], "Direct calls"): not when it
    /// may end with `resume` (the exception goes on to a landing pad whose marker the site reads) or in a tail
    /// call (the tail callee's activation comes next at the site).
    #[inline]
    pub fn binds_its_site(&self) -> bool {
        !self.may_resume && !self.tail_calls
    }

    /// The traced function called directly at call site `call` of `v`, if any.
    #[inline]
    pub fn direct_callee(&self, v: BlockId, call: u32) -> Option<FuncId> {
        let i = *self.site_base.get(v.index())? as usize + call as usize;
        self.direct.get(i).copied().filter(|&c| c != NONE).map(FuncId)
    }

    /// Whether returns write EOF (a placement without blocking witnesses before EXIT).
    pub fn writes_eof(&self) -> bool {
        self.eof != NONE
    }

    /// Bits of a witness token read at (or, for the encoder, written by an edge leaving) `v`.
    pub fn token_width(&self, v: BlockId) -> u8 {
        self.verts[v.index()].width
    }

    /// Entries in all rows: the tables' size in transitions (12 bytes each).
    pub fn num_transitions(&self) -> usize {
        self.trans.len()
    }

    /// Whether `e` is an edge tracing follows (a `Branch` or `Return` edge of this function).
    pub(crate) fn traces(&self, e: EdgeId) -> bool {
        self.edge_traced.get(e.index()).copied().unwrap_or(false)
    }

    pub(crate) fn num_vertices(&self) -> usize {
        self.verts.len()
    }

    /// Positions a sink that counts straight runs ([`super::StepSink::run`]) needs: one per plain vertex.
    pub fn num_run_positions(&self) -> usize {
        self.runs.len()
    }

    /// Adds to `edge_counts` (indexed by [`EdgeId`]) the crossings of the runs counted in `run_counts`
    /// (indexed by a run's position, as [`super::StepSink::run`] gives it): a run covers its sequence from
    /// its position to the end, so each step's crossings are the runs started at or before it in its sequence.
    /// A count for an edge outside `edge_counts` is left out (the slices are the caller's).
    pub fn add_run_counts(&self, run_counts: &[u64], edge_counts: &mut [u64]) {
        let mut crossings = 0u64;
        for (i, (step, &n)) in self.runs.iter().zip(run_counts).enumerate() {
            let first_of_sequence = i == 0 || self.runs[i - 1].left == 1;
            crossings = if first_of_sequence { n } else { crossings + n };
            if let Some(c) = edge_counts.get_mut(step.edge.index()) {
                *c += crossings;
            }
        }
    }
}

/// A direct callee given for a call site the function does not have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no call site {call} in block {block}")]
pub struct NoSuchSite {
    /// The block.
    pub block: BlockId,
    /// The call's index among the block's call sites.
    pub call: u32,
}

/// An implicit call of no function of the program: the reader could not begin its activation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("implicit call at site {call} of block {block} of {func} calls {callee}, which is no function of the program")]
pub struct BadImplicit {
    /// The caller.
    pub func: FuncId,
    /// The block.
    pub block: BlockId,
    /// The call's index among the block's call sites.
    pub call: u32,
    /// The callee.
    pub callee: FuncId,
}

/// The traced functions of a program, indexed by [`FuncId`]: what a trace file's metadata describes.
#[derive(Clone, Debug)]
pub struct Program {
    pub(crate) funcs: Vec<FuncTables>,
    pub(crate) func_bits: u8,
    /// The activation id that announces a resync marker ([`super::regenerate`], "Resync"), if any.
    pub(crate) resync: Option<FuncId>,
    /// The activation id that announces an unwind marker ([`super::regenerate`], "Unwinding"), if any.
    pub(crate) unwind: Option<FuncId>,
    /// The activation id that announces an abandon marker ([`super::regenerate`], "Abandoned activations"),
    /// if any.
    pub(crate) abandon: Option<FuncId>,
}

impl Program {
    /// A program of `funcs`; a function id in a trace takes ⌈log2 funcs.len()⌉ bits.
    pub fn new(funcs: Vec<FuncTables>) -> Program {
        let func_bits = super::view::bits_for(funcs.len() as u64);
        Program { funcs, func_bits, resync: None, unwind: None, abandon: None }
    }

    /// A program whose function ids take a fixed `func_bits` bits, for traces written before the number of
    /// functions is known (a run-time writer assigning ids as modules register); `None` if `funcs` do not fit.
    pub fn with_func_bits(funcs: Vec<FuncTables>, func_bits: u8) -> Option<Program> {
        let fits = func_bits <= 32 && (func_bits == 32 || (funcs.len() as u64) <= 1u64 << func_bits);
        fits.then_some(Program { funcs, func_bits, resync: None, unwind: None, abandon: None })
    }

    /// The same program with `id` (no function's) announcing resync markers; `None` if a function has it.
    pub fn with_resync(mut self, id: FuncId) -> Option<Program> {
        if id.index() < self.funcs.len() || (self.func_bits < 32 && u64::from(id.0) >= 1u64 << self.func_bits) {
            return None;
        }
        self.resync = Some(id);
        Some(self)
    }

    /// The same program with `id` (no function's, not the resync id) announcing unwind markers; `None` if a
    /// function has it.
    pub fn with_unwind(mut self, id: FuncId) -> Option<Program> {
        if id.index() < self.funcs.len()
            || Some(id) == self.resync
            || (self.func_bits < 32 && u64::from(id.0) >= 1u64 << self.func_bits)
        {
            return None;
        }
        self.unwind = Some(id);
        Some(self)
    }

    /// The same program with `id` (no function's, neither the resync nor the unwind id) announcing abandon
    /// markers; `None` if a function has it.
    pub fn with_abandon(mut self, id: FuncId) -> Option<Program> {
        if id.index() < self.funcs.len()
            || Some(id) == self.resync
            || Some(id) == self.unwind
            || (self.func_bits < 32 && u64::from(id.0) >= 1u64 << self.func_bits)
        {
            return None;
        }
        self.abandon = Some(id);
        Some(self)
    }

    /// Checks that every implicit call site calls a function of the program (the reader begins its activation
    /// without reading an id); the first site that does not is the error.
    pub fn check_implicit(&self) -> Result<(), BadImplicit> {
        for (f, t) in self.funcs.iter().enumerate() {
            for v in 0..t.calls.len() {
                for call in 0..t.calls[v] {
                    let block = BlockId::from_index(v);
                    if let Some(g) = t.implicit_callee(block, call) {
                        if self.func(g).is_none() {
                            return Err(BadImplicit { func: FuncId::from_index(f), block, call, callee: g });
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// One function's tables; `None` for an id past the functions or a placeholder ([`FuncTables::unclaimed`]).
    #[inline]
    pub fn func(&self, f: FuncId) -> Option<&FuncTables> {
        self.funcs.get(f.index()).filter(|t| !t.unclaimed)
    }

    /// Bits of a function id in the bit-level encodings.
    pub fn func_bits(&self) -> u8 {
        self.func_bits
    }

    /// Number of functions.
    pub fn num_funcs(&self) -> usize {
        self.funcs.len()
    }
}

use super::FuncId;
