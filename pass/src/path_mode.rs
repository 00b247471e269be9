//! Ball–Larus path profiling (MICRO 1996) on one function: plan with `pathprof-core`, then emit.
//!
//! The path register `r` is an SSA value: each block's value is a PHI (or a single incoming value) built in
//! the DAG's topological order, so loop-carried values are the constants `Inc(ENTRY→v)` of back edges and no
//! PHI depends on itself. Register arithmetic wraps in i64: every path's final sum lies in `0..num_paths`
//! (≤ 2^63), so intermediate wrap-around cannot change it.
//!
//! Code per cfg edge, from `pathprof_core::dag::CfgEdgeRole`:
//! - ordinary edge with `Inc ≠ 0`: `r + Inc` feeds the target's PHI (computed in the source block, or in the
//!   split block for split edges); `r = c` on the first chord falls out of constant folding;
//! - edge into EXIT: `count[r + Inc]++` (the last chord's add is folded into the slot index);
//! - back edge / cut edge `w→v`: `count[r + Inc(w→EXIT)]++` on the edge, and `Inc(ENTRY→v)` into v's PHI; in
//!   a loop [`crate::promote`] can keep in registers, the count first tests the path number against the one or
//!   two paths the loop repeats ([`PathPlan::promoted`]) and counts a match at its constant slot — unless the
//!   count moves up to the edges that decide its path ([`PathPlan::hoisted`]), each counting its constant
//!   number, with −1 on the other ways out of the blocks it passes (a `do … while` exit, a `break`);
//! - termination edge of block `b`: `count[r + Inc(b→EXIT)]++` before its first call that may not return: the
//!   truncated path counts arrivals at `b`, and the reader nets out the executions that came back (they end
//!   the other paths with the same prefix, `pathprof_core::arrivals`), so a path cut short by `exit()`,
//!   `longjmp` or an exception is counted, and completed paths are not, with one update instead of two.

use crate::cfg_build::{FunctionGraph, Site};
use crate::emit::HotSlots;
use crate::ir;
use crate::promote::{LocalCount, LocalCounts};
use crate::storage::Sink;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use pathprof_core::ball_larus::hoisting::{hoisted_count_sites, prefix_counts, HoistedCount};
use pathprof_core::ball_larus::{promoted_paths, ResetRule};
use pathprof_core::dag::{CfgEdgeRole, DagEdgeId, DagEdgeKind, PathDag};
use pathprof_core::dfs::depth_first;
use pathprof_core::increments::Increments;
use pathprof_core::numbering::Numbering;
use pathprof_core::promotion::promotion_regions;
use pathprof_core::{BlockId, EdgeId, EdgeKind};
use pathprof_format::meta::{PathMeta, PathStorage};
use std::collections::BTreeMap;

/// Everything decided for one function before any IR changes.
pub struct PathPlan {
    /// The function's graph and IR facts.
    pub graph: FunctionGraph,
    /// The (possibly cut) Ball–Larus DAG.
    pub dag: PathDag,
    /// Chord increments.
    pub incs: Increments,
    /// NumPaths(ENTRY).
    pub num_paths: u128,
    /// Edges split only to give a parallel edge its own PHI entry.
    pub split_for_phi: Vec<bool>,
    /// Recorded facts for the metadata.
    pub meta: PathMeta,
    /// Whether promotion may touch the function (the `promote` it was planned with).
    pub promotes: bool,
    /// Per cfg edge: the path numbers its count tests for, so that [`crate::promote`] can keep their counts in
    /// registers (`pathprof_core::promoted_paths`); empty for edges counted as before.
    pub promoted: Vec<Vec<u128>>,
    /// Per back or cut edge: where its count moves to, sites with a constant path number and the uncounts on
    /// the other ways out of the blocks it passes (`pathprof_core::ball_larus::hoisting`); `None` for edges that
    /// count themselves.
    pub hoisted: Vec<Option<HoistedCount>>,
}

/// How many path numbers a back edge's count tests for before counting in memory: each costs a compare per
/// iteration whether it matches or not.
const PROMOTED_PATHS_PER_EDGE: usize = 2;

/// Plans path profiling of `graph`; `cfg_weights` are the cfg edge weights (cost only); `promote`: test back
/// edges' counts for the paths their loops repeat ([`PathPlan::promoted`]; path mode, promotion on, a function
/// [`crate::promote::eligible`]); `resets`: the module's DAGs restart paths at loop entries
/// ([`crate::config::Config::path_loop_resets`]).
pub fn plan(
    graph: FunctionGraph,
    cfg_weights: &[f64],
    budget: u128,
    choose_storage: &dyn Fn(u128) -> PathStorage,
    promote: bool,
    resets: ResetRule,
) -> Result<PathPlan, String> {
    let cfg = &graph.cfg;
    let adj = cfg.adjacency();
    let dfs = depth_first(cfg, &adj);
    let dag =
        PathDag::build_for_path_mode(cfg, &adj, &dfs, budget, resets).map_err(|e| format!("path numbering: {e}"))?;
    let numbering = Numbering::compute(&dag).map_err(|e| format!("path numbering: {e}"))?;
    let num_paths = numbering.num_paths();

    // Parallel edges (two switch cases to one block) need distinct PHI entries: split all but the first.
    let mut split_for_phi = vec![false; cfg.num_edges()];
    for v in cfg.vertices() {
        let mut seen: BTreeMap<BlockId, ()> = BTreeMap::new();
        for &e in adj.out_edges(v) {
            let edge = cfg.edge(e);
            if !matches!(edge.kind, EdgeKind::Branch { .. }) || dag.cfg_edge_role(e) == CfgEdgeRole::Unreachable {
                continue;
            }
            if seen.insert(edge.to, ()).is_some() {
                let term = ir::terminator(graph.blocks[edge.from.index()]).expect("checked when building");
                if !matches!(ir::opcode(term), LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch) {
                    return Err("parallel edges from an unsplittable terminator".into());
                }
                split_for_phi[e.index()] = true;
            }
        }
    }
    // Code that must run on an edge needs a place to go.
    for e in cfg.edge_ids() {
        let role = dag.cfg_edge_role(e);
        let needs_code = role.segment_break().is_some();
        if needs_code && graph.sites[e.index()] == Site::None {
            return Err(format!("edge {e} needs path code but cannot carry any"));
        }
    }

    let dag_weights: Vec<f64> = dag
        .edges()
        .iter()
        .map(|d| match d.kind {
            DagEdgeKind::Real(e)
            | DagEdgeKind::EntrySurrogate { back: e }
            | DagEdgeKind::ExitSurrogate { back: e }
            | DagEdgeKind::SplitEntry { edge: e }
            | DagEdgeKind::SplitExit { edge: e } => cfg_weights[e.index()],
            DagEdgeKind::ExitToEntry => 0.0,
        })
        .collect();
    let incs = Increments::compute(&dag, &numbering, &dag_weights, &[]).map_err(|e| format!("increments: {e}"))?;

    let storage = choose_storage(num_paths);
    let mut instrumented_edges: Vec<u32> = cfg
        .edge_ids()
        .filter(|&e| match dag.cfg_edge_role(e) {
            CfgEdgeRole::Real(d) => {
                incs.inc(d) != 0 || matches!(cfg.edge(e).kind, EdgeKind::Return | EdgeKind::Termination)
            }
            CfgEdgeRole::Back { .. } | CfgEdgeRole::Cut { .. } => true,
            CfgEdgeRole::Unreachable | CfgEdgeRole::ExitToEntry(_) => false,
        })
        .map(|e| e.0)
        .collect();
    // A match counts at a constant address of the dense array, where promotion finds it, or (hash tables) in
    // a local slot. Sparse regions are left to memory: their loops tested and promoted cost bzip2's
    // decompressor 6.5% more instructions (its state machine's back edges rarely match).
    let mut promoted = if promote && !matches!(storage, PathStorage::Sparse { .. }) {
        let regions = promotion_regions(cfg, &crate::promote::blocked_blocks(&graph));
        promoted_paths(cfg, &dag, &numbering, &regions, PROMOTED_PATHS_PER_EDGE)
    } else {
        vec![Vec::new(); cfg.num_edges()]
    };
    let hoisted =
        if storage == PathStorage::Dense { hoisted_counts(&graph, &dag, &adj) } else { vec![None; cfg.num_edges()] };
    for (e, h) in hoisted.iter().enumerate() {
        if let Some(h) = h {
            promoted[e].clear();
            instrumented_edges.extend(h.sites.iter().map(|s| s.edge.0).chain(h.uncounts.iter().map(|u| u.edge.0)));
        }
    }
    instrumented_edges.sort_unstable();
    instrumented_edges.dedup();
    let meta = PathMeta { budget, num_paths, storage, instrumented_edges };
    Ok(PathPlan { graph, dag, incs, num_paths, split_for_phi, meta, promotes: promote, promoted, hoisted })
}

/// Per cfg edge, where its segment count moves to (`pathprof_core::ball_larus::hoisting`): through blocks
/// that cannot be left abnormally or re-entered (a call that returns twice), onto edges that can carry code.
fn hoisted_counts(g: &FunctionGraph, dag: &PathDag, adj: &pathprof_core::Adjacency) -> Vec<Option<HoistedCount>> {
    let cfg = &g.cfg;
    let prefixes = prefix_counts(dag);
    let may_pass = |v: BlockId| g.abnormal_calls[v.index()].is_empty() && !g.reentry_blocks.contains(&v.0);
    let usable = |e: EdgeId| matches!(g.sites[e.index()], Site::SourceEnd | Site::TargetStart | Site::Split);
    cfg.edge_ids()
        .map(|e| {
            hoisted_count_sites(cfg, adj, dag, &prefixes, e, &may_pass)
                .filter(|h| h.sites.iter().map(|s| s.edge).chain(h.uncounts.iter().map(|u| u.edge)).all(usable))
        })
        .collect()
}

/// A value of the path register: known at compile time, or an SSA value.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum RVal {
    Const(i64),
    Value(LLVMValueRef),
}

/// The count at the end of a back or cut edge: slot `r + offset` of the path register value `r`, plus one.
#[derive(Copy, Clone)]
struct Action {
    r: RVal,
    offset: i64,
}

struct Emitter<'a> {
    sink: &'a Sink<'a>,
    b: LLVMBuilderRef,
    i64t: LLVMTypeRef,
    /// For a function with a hash table that promotion may touch: its counts at constant path numbers and its
    /// loops' tested paths, kept in local slots ([`crate::promote::LocalCount`]).
    locals: Option<LocalCounts>,
}

impl Emitter<'_> {
    fn konst(&self, v: i64) -> LLVMValueRef {
        self.sink.counters().const_index(v as u64)
    }

    /// Materialises `r + k` before `before` (folded when `r` is constant or `k` is 0).
    fn add(&self, before: LLVMValueRef, r: RVal, k: i64) -> RVal {
        match r {
            RVal::Const(c) => RVal::Const(c.wrapping_add(k)),
            RVal::Value(v) if k == 0 => RVal::Value(v),
            RVal::Value(v) => unsafe {
                LLVMPositionBuilderBefore(self.b, before);
                RVal::Value(LLVMBuildAdd(self.b, v, self.konst(k), c"pathprof.r".as_ptr()))
            },
        }
    }

    fn as_value(&self, r: RVal) -> LLVMValueRef {
        match r {
            RVal::Const(c) => self.konst(c),
            RVal::Value(v) => v,
        }
    }

    /// `count[path] += delta` before `before`.
    fn count(&self, before: LLVMValueRef, path: RVal, delta: RVal) {
        match self.sink {
            Sink::Dense { counters, base } => {
                let idx = match self.add(before, path, *base as i64) {
                    RVal::Const(c) => Ok(c as u64),
                    RVal::Value(v) => Err(v),
                };
                match delta {
                    RVal::Const(d) => counters.add_before(before, idx, d),
                    RVal::Value(d) => counters.add_value_before(before, idx, d),
                }
            }
            Sink::Hashed { .. } => match (&self.locals, path) {
                // A call per count: in a slot instead, which a loop keeps in a register until it exits.
                (Some(locals), RVal::Const(c)) => locals.count(before, self.konst(c), self.as_value(delta)),
                _ => self.sink.add_before(before, self.as_value(path), self.as_value(delta)),
            },
        }
    }
}

impl Emitter<'_> {
    /// `count[path]++` before `before`, where `path` is likely one of `tested`: a chain of compares counts each
    /// of them at its constant slot in the dense array (an update [`crate::promote`] keeps in a register inside
    /// the loop) or, for a function with a hash table, in a local slot of its own (added to the count where the
    /// loop is left, [`crate::promote::flush_local_counts`]), and any other number in memory. Sparse regions
    /// test nothing ([`PathPlan::promoted`] is empty for them).
    fn count_tested(&self, before: LLVMValueRef, path: LLVMValueRef, tested: &[u128]) {
        let counters = self.sink.counters();
        let rest = match (self.sink, &self.locals) {
            // A sparse region has no constant addresses (and tests nothing: see above).
            (Sink::Dense { counters, .. }, _) if counters.is_indirect() => before,
            (Sink::Dense { base, .. }, _) => {
                let hot: Vec<_> = tested
                    .iter()
                    .map(|&c| (self.konst(c as i64), counters.constant_address(base + c as u64)))
                    .collect();
                counters.count_if_hot(before, path, &hot, HotSlots::Counters)
            }
            (Sink::Hashed { .. }, Some(locals)) => {
                let hot: Vec<_> = tested
                    .iter()
                    .map(|&c| {
                        let key = self.konst(c as i64);
                        (key, locals.slot(key))
                    })
                    .collect();
                counters.count_if_hot(before, path, &hot, HotSlots::Local)
            }
            (Sink::Hashed { .. }, None) => before,
        };
        self.count(rest, RVal::Value(path), RVal::Const(1));
    }
}

/// Where a return's path count goes ([`return_count_site`]).
enum ReturnCountSite {
    /// Right before the return.
    AtReturn,
    /// At the start of the returning block: its calls come after the count.
    AtStart,
    /// At the start of each predecessor of the returning block (the edge into it and its DAG edge): the
    /// predecessors' calls come after the counts.
    InPredecessors(Vec<(EdgeId, DagEdgeId)>),
}

/// Where the path count of the return from block `b` goes. A count after a call keeps LLVM from turning the
/// call into a jump: a tail call (`return g(x)`), or the recursion a function accumulates
/// (`return n < 2 ? n : fib(n - 1) + fib(n - 2)`, whose plain build loops instead of making the second call).
/// When the path's number is final earlier — at the start of the returning block, or at the start of each
/// predecessor that can only go on to it — and every call from there to the return is sure to return normally
/// (no call that may leave abnormally or return twice: those blocks count arrivals instead), every execution
/// that passes the earlier point takes the return, so the count moves there, before the calls. Only where
/// there are calls to move past.
fn return_count_site(g: &FunctionGraph, dag: &PathDag, adj: &pathprof_core::Adjacency, b: BlockId) -> ReturnCountSite {
    let plain = |v: BlockId| g.abnormal_calls[v.index()].is_empty() && !g.reentry_blocks.contains(&v.0);
    if !plain(b) {
        return ReturnCountSite::AtReturn;
    }
    if has_call(g.blocks[b.index()]) {
        return ReturnCountSite::AtStart;
    }
    let mut preds = Vec::new();
    let mut calls = false;
    for &e in adj.in_edges(b) {
        let edge = g.cfg.edge(e);
        let (EdgeKind::Branch { .. }, CfgEdgeRole::Real(d)) = (edge.kind, dag.cfg_edge_role(e)) else {
            return ReturnCountSite::AtReturn;
        };
        let p = edge.from;
        let only_successor = adj.out_edges(p).iter().all(|&o| o == e);
        if p == b || !only_successor || !plain(p) || g.sites[e.index()] == Site::TargetPhi {
            return ReturnCountSite::AtReturn;
        }
        calls |= has_call(g.blocks[p.index()]);
        preds.push((e, d));
    }
    if calls && !preds.is_empty() {
        ReturnCountSite::InPredecessors(preds)
    } else {
        ReturnCountSite::AtReturn
    }
}

/// Whether `bb` calls a function (intrinsics and inline assembly do not count).
fn has_call(bb: LLVMBasicBlockRef) -> bool {
    ir::instructions(bb).into_iter().any(|i| {
        ir::opcode(i) == LLVMOpcode::LLVMCall
            && !ir::calls_inline_asm(i)
            && ir::called_function(i).is_none_or(|f| ir::intrinsic_id(f) == 0)
    })
}

/// What [`emit`] leaves to the module.
pub struct Emitted {
    /// Per block that counts arrivals, the number of its truncated path (what a fork re-entry of its calls
    /// records, see [`crate::fork_check`]).
    pub arrival_keys: Vec<Option<crate::fork_check::Key>>,
    /// The loop paths of a function outside the dense array counted in local slots, for
    /// [`crate::promote::flush_local_counts`].
    pub local_counts: Vec<LocalCount>,
}

/// Emits path profiling for a planned function.
pub fn emit(p: &PathPlan, sink: &Sink) -> Emitted {
    let g = &p.graph;
    let cfg = &g.cfg;
    let adj = cfg.adjacency();
    let counters = sink.counters();
    let b = counters.builder();
    let em = Emitter {
        sink,
        b,
        i64t: unsafe { LLVMInt64TypeInContext(LLVMGetTypeContext(LLVMTypeOf(counters.const_index(0)))) },
        locals: (p.promotes && matches!(sink, Sink::Hashed { .. })).then(|| LocalCounts::new(b, g.blocks[0])),
    };
    let inc = |d: DagEdgeId| p.incs.inc(d) as i64; // wraps mod 2^64, see the module docs
    let mut arrival_keys: Vec<Option<crate::fork_check::Key>> = vec![None; cfg.num_blocks()];

    // 1. Splits: parallel edges (own PHI entry) and edge code with a Split site.
    let mut carries_hoisted = vec![false; cfg.num_edges()];
    for h in p.hoisted.iter().flatten() {
        for e in h.sites.iter().map(|s| s.edge).chain(h.uncounts.iter().map(|u| u.edge)) {
            carries_hoisted[e.index()] = true;
        }
    }
    let via = g.split_edges(|e| {
        let code = p.dag.cfg_edge_role(e).segment_break().is_some() || carries_hoisted[e.index()];
        p.split_for_phi[e.index()] || (code && g.sites[e.index()] == Site::Split)
    });
    let incoming_block = |e: EdgeId| via[e.index()].unwrap_or(g.blocks[cfg.edge(e).from.index()]);

    // 2. The register, block by block in topological order.
    let mut r_in: Vec<Option<RVal>> = vec![None; cfg.num_blocks()];
    for &v in p.dag.topological_order() {
        if v.index() >= cfg.num_blocks() {
            continue; // EXIT
        }
        if v == cfg.entry() {
            r_in[0] = Some(RVal::Const(0));
            continue;
        }
        let mut entries: Vec<(LLVMBasicBlockRef, RVal)> = Vec::new();
        for &e in adj.in_edges(v) {
            if !matches!(cfg.edge(e).kind, EdgeKind::Branch { .. }) {
                continue;
            }
            let from = cfg.edge(e).from;
            let val = match p.dag.cfg_edge_role(e) {
                CfgEdgeRole::Unreachable | CfgEdgeRole::ExitToEntry(_) => RVal::Const(0),
                CfgEdgeRole::Back { entry, .. } | CfgEdgeRole::Cut { entry, .. } => RVal::Const(inc(entry)),
                CfgEdgeRole::Real(d) => {
                    let r = r_in[from.index()].expect("topological order visits predecessors first");
                    let at = match via[e.index()] {
                        Some(s) => ir::terminator(s).expect("split block ends in a branch"),
                        None => ir::terminator(g.blocks[from.index()]).expect("checked when building"),
                    };
                    em.add(at, r, inc(d))
                }
            };
            entries.push((incoming_block(e), val));
        }
        // A reachable block other than the entry has at least one incoming edge.
        let first = entries.first().map(|x| x.1).expect("a reachable block has a predecessor");
        r_in[v.index()] = Some(if entries.iter().all(|x| x.1 == first) {
            first
        } else {
            unsafe {
                LLVMPositionBuilderBeforeInstrAndDbgRecords(em.b, LLVMGetFirstInstruction(g.blocks[v.index()]));
                let phi = LLVMBuildPhi(em.b, em.i64t, c"pathprof.path".as_ptr());
                for (bb, val) in &entries {
                    let mut vals = [em.as_value(*val)];
                    let mut bbs = [*bb];
                    LLVMAddIncoming(phi, vals.as_mut_ptr(), bbs.as_mut_ptr(), 1);
                }
                RVal::Value(phi)
            }
        });
    }

    // 3. Counting: returns, truncated paths (arrivals), back and cut edges.
    // Per PHI-placed target block: the count of each incoming edge that ends a path (at most one per edge).
    let mut phi_actions: BTreeMap<usize, BTreeMap<EdgeId, Action>> = BTreeMap::new();
    // Back edges whose count tests for the loop's repeated paths: (insertion point, path number, tested paths).
    let mut tested: Vec<(LLVMValueRef, LLVMValueRef, &[u128])> = Vec::new();
    // Where code on edge `e` goes (`None` for a target-PHI site, whose count the target's PHIs select).
    let edge_point = |e: EdgeId| -> Option<LLVMValueRef> {
        let edge = cfg.edge(e);
        let at = match g.sites[e.index()] {
            _ if via[e.index()].is_some() => via[e.index()].and_then(ir::terminator),
            Site::SourceEnd => ir::source_end_insertion_point(g.blocks[edge.from.index()]),
            Site::TargetStart => ir::first_insertion_point(g.blocks[edge.to.index()]),
            Site::TargetPhi => return None,
            Site::Split | Site::None => unreachable!("split edges have a block; planning rejected None"),
        };
        Some(at.expect("a block has a terminator"))
    };
    let mut on_edge = |e: EdgeId, a: Action, phi_actions: &mut BTreeMap<usize, BTreeMap<EdgeId, Action>>| {
        let Some(at) = edge_point(e) else {
            let previous = phi_actions.entry(cfg.edge(e).to.index()).or_default().insert(e, a);
            debug_assert!(previous.is_none(), "an edge ends at most one path");
            return;
        };
        let path = em.add(at, a.r, a.offset);
        match path {
            // Split after everything else is placed: blocks stay as the other edges' code expects them.
            RVal::Value(v) if !p.promoted[e.index()].is_empty() => tested.push((at, v, &p.promoted[e.index()])),
            _ => em.count(at, path, RVal::Const(1)),
        }
    };
    for e in cfg.edge_ids() {
        let edge = *cfg.edge(e);
        let role = p.dag.cfg_edge_role(e);
        let Some(r) = r_in.get(edge.from.index()).copied().flatten() else { continue };
        match (edge.kind, role) {
            (EdgeKind::Return, CfgEdgeRole::Real(d)) => {
                let bb = g.blocks[edge.from.index()];
                // Each count: where it goes, the register there and the offset to add.
                let counts: Vec<(Option<LLVMValueRef>, RVal, i64)> = match return_count_site(g, &p.dag, &adj, edge.from)
                {
                    ReturnCountSite::AtReturn => vec![(ir::source_end_insertion_point(bb), r, inc(d))],
                    ReturnCountSite::AtStart => vec![(ir::first_insertion_point(bb), r, inc(d))],
                    ReturnCountSite::InPredecessors(preds) => preds
                        .into_iter()
                        .map(|(into, pd)| {
                            let from = cfg.edge(into).from;
                            let rp = r_in[from.index()].expect("a predecessor's register is built");
                            (ir::first_insertion_point(g.blocks[from.index()]), rp, inc(pd).wrapping_add(inc(d)))
                        })
                        .collect(),
                };
                for (at, r, offset) in counts {
                    let at = at.expect("a block has a terminator");
                    let path = em.add(at, r, offset);
                    em.count(at, path, RVal::Const(1));
                }
            }
            (EdgeKind::Termination, CfgEdgeRole::Real(d)) => {
                // The truncated path counts arrivals, once, before the block's first call that may not return;
                // nothing is retracted when the calls return: the reader derives the net count from the paths
                // that went on (`pathprof_core::arrivals`).
                let bb = g.blocks[edge.from.index()];
                let calls = &g.abnormal_calls[edge.from.index()];
                let before = calls.first().copied().or_else(|| ir::terminator(bb)).expect("terminator");
                let path = em.add(before, r, inc(d));
                em.count(before, path, RVal::Const(1));
                arrival_keys[edge.from.index()] = Some(match path {
                    RVal::Const(c) => crate::fork_check::Key::Const(c as u64),
                    RVal::Value(v) => crate::fork_check::Key::Value(v),
                });
            }
            _ => {}
        }
        let Some((exit, _)) = role.segment_break() else { continue };
        let Some(h) = &p.hoisted[e.index()] else {
            on_edge(e, Action { r, offset: inc(exit) }, &mut phi_actions);
            continue;
        };
        // Hoisted: each site counts its path's number, the site's source register plus the increments on the
        // way; each uncount takes back the number its source's register would have reached the edge with.
        for s in &h.sites {
            let at = edge_point(s.edge).expect("planning kept sites that carry code");
            let r = r_in[cfg.edge(s.edge).from.index()].expect("a site's source is reachable");
            let offset = s.dag_edges.iter().fold(inc(exit), |acc, &d| acc.wrapping_add(inc(d)));
            let path = em.add(at, r, offset);
            em.count(at, path, RVal::Const(1));
        }
        for u in &h.uncounts {
            let at = edge_point(u.edge).expect("planning kept uncounts that carry code");
            let r = r_in[cfg.edge(u.edge).from.index()].expect("an uncount's source is reachable");
            let offset = u.dag_edges.iter().fold(inc(exit), |acc, &d| acc.wrapping_add(inc(d)));
            let path = em.add(at, r, offset);
            em.count(at, path, RVal::Const(-1));
        }
    }

    // 4. PHI-selected counts in targets whose incoming edges cannot be split (landing pads, indirectbr).
    for (v, actions) in phi_actions {
        let bb = g.blocks[v];
        let mut path_entries = Vec::new();
        for &e in adj.in_edges(BlockId(v as u32)) {
            if !matches!(cfg.edge(e).kind, EdgeKind::Branch { .. }) {
                continue;
            }
            // Edges that end no path enter with delta 0.
            let (path, delta) = match actions.get(&e) {
                Some(a) => {
                    let at = ir::terminator(g.blocks[cfg.edge(e).from.index()]).expect("terminator");
                    (em.add(at, a.r, a.offset), 1)
                }
                None => (RVal::Const(0), 0),
            };
            path_entries.push((incoming_block(e), path, delta));
        }
        unsafe {
            LLVMPositionBuilderBeforeInstrAndDbgRecords(em.b, LLVMGetFirstInstruction(bb));
            let path_phi = LLVMBuildPhi(em.b, em.i64t, c"pathprof.edge.path".as_ptr());
            let delta_phi = LLVMBuildPhi(em.b, em.i64t, c"pathprof.edge.delta".as_ptr());
            for (blk, path, delta) in &path_entries {
                let mut pv = [em.as_value(*path)];
                let mut dv = [em.konst(*delta)];
                let mut bbs = [*blk];
                LLVMAddIncoming(path_phi, pv.as_mut_ptr(), bbs.as_mut_ptr(), 1);
                LLVMAddIncoming(delta_phi, dv.as_mut_ptr(), bbs.as_mut_ptr(), 1);
            }
            let at = ir::first_insertion_point(bb).expect("terminator");
            em.count(at, RVal::Value(path_phi), RVal::Value(delta_phi));
        }
    }

    // 5. The tested back-edge counts, last: they split their blocks.
    for (at, path, paths) in tested {
        em.count_tested(at, path, paths);
    }
    Emitted { arrival_keys, local_counts: em.locals.map(LocalCounts::into_counts).unwrap_or_default() }
}
