//! Melski–Reps context and piecewise profiling, planning: which functions form the program, where the call
//! sites are, and how many call sites the budget policy (§8) must cut.
//!
//! Scope (§8 hybrid profiling, per translation unit): the program is the module's instrumentable functions.
//! A direct `call` (not `invoke`, not `musttail`) of one of them that makes no `musttail` call itself is a call
//! site: the pass splits its block right after the call, so the call ends the *call block* whose only successor
//! is the new *return-site block* (`pathprof_core::interproc::program`). Calls to anything else (other modules,
//! libraries, function pointers) are ordinary instructions: their callees run outside the program, and if they
//! call back into it, the function entered is a root. Recursive sites become summary edges in the core
//! (Transformation 3).
//!
//! A function is *externally entered* (a root) unless it has internal linkage and every use of it is the
//! callee of one of our call sites; such functions are only ever entered through a call site, so their entry
//! code needs no check. The others check at entry whether their caller announced them (see
//! [`crate::interproc_emit`]).
//!
//! Left out of the program, with a warning: functions that `invoke` a `setjmp`-like function (a plain call of
//! one is kept: [`crate::interproc_emit`] puts the path state back after it), functions that cannot be
//! instrumented at all (as in path mode), and — piecewise only — functions with a back edge into a block
//! reached through edges that cannot carry code.
//!
//! A function with more than budget/256 acyclic paths of its own is cut at vertices, as path mode cuts one
//! (`PathDag::build_with_budget_keeping`): a cut vertex's out-edges end and restart paths like back edges. Call
//! blocks are never cut (their edge stands for the call), nor, in piecewise mode, a block with an edge that
//! only a PHI can count. Only a function that no cut brings under the bound is left out.

use crate::cfg_build::{self, CallFacts, FunctionGraph, Site};
use crate::config::Config;
use crate::ir;
use crate::shim;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMLinkage, LLVMOpcode};
use pathprof_core::ball_larus::resets::interproc_loop_resets;
use pathprof_core::dag::PathDag;
use pathprof_core::dfs::{depth_first, DfsInfo};
use pathprof_core::graph::Adjacency;
use pathprof_core::interproc::units::component_order;
use pathprof_core::interproc::{CallSite, CallSiteId, Callee, Mode, ProcId, Procedure, Program, SiteRole, Supergraph};
use pathprof_core::loops::NaturalLoop;
use pathprof_core::{BlockId, Cfg, Edge, EdgeId, EdgeKind};
use std::collections::{HashMap, HashSet};

/// One function of the program after splitting.
pub struct ProcPlan {
    /// The LLVM function.
    pub f: LLVMValueRef,
    /// Its linkage name.
    pub name: String,
    /// Its graph (resume edges turned into termination edges, see [`build_graph`]).
    pub graph: FunctionGraph,
    /// The call sites, by increasing call block.
    pub site_calls: Vec<SiteCall>,
    /// Whether code outside the program may enter it.
    pub external_entry: bool,
    /// Where its own paths are cut (empty unless it has more than the own-path bound).
    pub cut_vertices: Vec<BlockId>,
    /// The loops whose every path restarts at their header (`pathprof_core::ball_larus::resets`).
    pub reset_headers: Vec<BlockId>,
}

/// One call site of a [`ProcPlan`], located once after the blocks were split.
#[derive(Copy, Clone, Debug)]
pub struct SiteCall {
    /// The call block (the call is its last instruction before the branch to the return site).
    pub block: BlockId,
    /// The call instruction.
    pub call: LLVMValueRef,
    /// The callee's position in the program.
    pub callee: usize,
}

/// The program as planned: functions, the supergraph over them, and what the budget policy did.
pub struct ProgramPlan {
    /// The functions in `ProcId` order: module order, grouped so that functions joined by calls are adjacent.
    pub procs: Vec<ProcPlan>,
    /// G*_fn of the program (call sites cut by the budget are `Callee::Cut`).
    pub supergraph: Supergraph,
    /// Call sites the budget policy cut.
    pub budget_cuts: u32,
    /// Call sites cut because their callee is a leaf with a loop (`Config::ip_cut_leaves`).
    pub leaf_cuts: u32,
}

/// Whether `p`'s graph has a loop (a back edge reachable from its entry).
fn has_loop(p: &ProcPlan) -> bool {
    let cfg = &p.graph.cfg;
    let dfs = depth_first(cfg, &cfg.adjacency());
    cfg.edge_ids().any(|e| dfs.is_back_edge(e))
}

/// Selects the program, splits call blocks, builds graphs and the supergraph (with each function's loop resets
/// when `loop_resets`), and cuts call sites until the numbering fits `budget` paths. Changes the IR only by
/// splitting blocks after call-site calls (and before one that follows a call that may not return). Functions
/// left out of the program are added to `left_out` (function, why); `None` when no function is left.
pub fn plan(
    candidates: &[LLVMValueRef],
    facts: &CallFacts,
    mode: Mode,
    config: &Config,
    left_out: &mut Vec<(LLVMValueRef, String)>,
) -> Result<Option<ProgramPlan>, String> {
    let (budget, loop_resets) = (config.path_budget, config.loop_resets);
    let mut members: Vec<LLVMValueRef> = Vec::new();
    for &f in candidates {
        match admissible(f, facts, mode, budget >> 8) {
            Ok(()) => members.push(f),
            Err(why) => left_out.push((f, why)),
        }
    }
    if members.is_empty() {
        return Ok(None);
    }
    // A member that ends some activations with a `musttail` call is entered as a root only: entered through a
    // call site, it would hand its path back before the tail call, and the code that runs before the chain of
    // tail calls returns to the caller may store another (a root activation's return, a site call's
    // announcement), which the caller would read as its callee's — counts wrong and reported exact.
    let site_callees: HashSet<LLVMValueRef> = members.iter().copied().filter(|&f| !ir::has_musttail_call(f)).collect();

    // Call sites: direct plain calls of members.
    let mut site_calls: HashMap<LLVMValueRef, Vec<LLVMValueRef>> = HashMap::new();
    for &f in &members {
        let calls: Vec<LLVMValueRef> =
            ir::blocks(f).into_iter().flat_map(ir::instructions).filter(|&i| is_site_call(i, &site_callees)).collect();
        site_calls.insert(f, calls);
    }
    let all_site_calls: HashSet<LLVMValueRef> = site_calls.values().flatten().copied().collect();
    for calls in site_calls.values() {
        for &c in calls {
            // A call block's only call that may leave abnormally is its site call, so that an interprocedural
            // site needs no arrival count of its own (`pathprof_core::interproc::counted_termination`).
            if let Some(prev) = abnormal_call_before(c, facts) {
                if unsafe { shim::pathprof_shim_split_after(prev) }.is_null() {
                    return Err("LLVM refused to split a call block".into());
                }
            }
            let r = unsafe { shim::pathprof_shim_split_after(c) };
            if r.is_null() {
                return Err("LLVM refused to split a call block".into());
            }
        }
    }

    let index: HashMap<LLVMValueRef, usize> = members.iter().enumerate().map(|(i, &f)| (f, i)).collect();
    let mut procs = Vec::with_capacity(members.len());
    for &f in &members {
        let graph = build_graph(f, facts).map_err(|e| format!("{}: {e}", ir::name(f)))?;
        let block_of: HashMap<LLVMBasicBlockRef, u32> =
            graph.blocks.iter().enumerate().map(|(i, &b)| (b, i as u32)).collect();
        let mut calls = Vec::new();
        for c in site_calls.remove(&f).unwrap_or_default() {
            let bb = unsafe { LLVMGetInstructionParent(c) };
            let block = *block_of.get(&bb).ok_or("call site outside its function")?;
            let callee =
                ir::called_function(c).and_then(|q| index.get(&q).copied()).ok_or("call site lost its callee")?;
            calls.push(SiteCall { block: BlockId(block), call: c, callee });
        }
        calls.sort_by_key(|s| s.block);
        let call_blocks: HashSet<BlockId> = calls.iter().map(|s| s.block).collect();
        let adj = graph.cfg.adjacency();
        let dfs = depth_first(&graph.cfg, &adj);
        let reset =
            if loop_resets { resets(&graph, &adj, &dfs, &call_blocks) } else { vec![false; graph.cfg.num_vertices()] };
        let cut_vertices = own_path_cuts(&graph, &adj, &dfs, mode, budget >> 8, &reset, |b| call_blocks.contains(&b))
            .map_err(|why| format!("{}: {why}", ir::name(f)))?;
        procs.push(ProcPlan {
            f,
            name: ir::name(f),
            graph,
            site_calls: calls,
            external_entry: is_externally_entered(f, &all_site_calls),
            cut_vertices,
            reset_headers: (0..reset.len()).filter(|&v| reset[v]).map(BlockId::from_index).collect(),
        });
    }

    // Leaves with a loop, when asked (`Config::ip_cut_leaves`): cut before the budget policy runs.
    let mut cut: HashSet<usize> = HashSet::new();
    if config.ip_cut_leaves {
        cut.extend(procs.iter().enumerate().filter(|(_, p)| p.site_calls.is_empty() && has_loop(p)).map(|(i, _)| i));
    }
    let called: Vec<usize> = procs.iter().flat_map(|p| p.site_calls.iter().map(|s| s.callee)).collect();
    let leaf_cuts = called.iter().filter(|q| cut.contains(q)).count() as u32;
    // The budget policy: cut every site of the callees with the most paths until the total fits.
    let mut budget_cuts = 0u32;
    let mut sg = Supergraph::build(build_program(&procs)?);
    if !cut.is_empty() {
        sg = sg.with_cut(|q| cut.contains(&q.index()));
    }
    loop {
        let verdict: Option<Vec<usize>> = match sg.number(mode) {
            Ok(num) if num.num_paths() <= budget => None,
            Ok(num) => {
                // Callees still reached through interprocedural sites, by their number of paths; cut the one
                // with the most and, to keep the number of rounds logarithmic, every one within a factor 16 of it.
                let mut paths_of: Vec<(usize, u128)> = Vec::new();
                for (i, s) in sg.program().sites().iter().enumerate() {
                    if sg.calls().roles().get(i) != Some(&SiteRole::Interprocedural) {
                        continue;
                    }
                    if let Callee::Proc(q) = s.callee {
                        paths_of.push((q.index(), num.psi(q, BlockId(0)).checked_apply(1).unwrap_or(u128::MAX)));
                    }
                }
                let max = paths_of.iter().map(|&(_, p)| p).max();
                Some(match max {
                    Some(max) => {
                        let mut v: Vec<usize> =
                            paths_of.iter().filter(|&&(_, p)| p >= max / 16).map(|&(q, _)| q).collect();
                        v.sort_unstable();
                        v.dedup();
                        v
                    }
                    None => Vec::new(),
                })
            }
            Err(pathprof_core::interproc::NumberingError::TooManyPaths { proc, .. }) => {
                // The overflowing procedure's callees: its ψ multiplies theirs. If it calls none, the overflow
                // is in what its callers continue with after it returns (piecewise numUnbalRLPaths, which sums
                // over every return site of its calls): the procedure's own call sites.
                let interprocedural_callee = |s: CallSiteId| match sg.program().site(s).map(|i| i.callee) {
                    Some(Callee::Proc(q)) if sg.calls().role(s) == SiteRole::Interprocedural => Some(q),
                    _ => None,
                };
                let mut v: Vec<usize> =
                    sg.program().sites_of(proc).filter_map(interprocedural_callee).map(|q| q.index()).collect();
                let mut sites = (0..sg.program().sites().len()).map(CallSiteId::from_index);
                if v.is_empty() && sites.any(|s| interprocedural_callee(s) == Some(proc)) {
                    v.push(proc.index());
                }
                v.sort_unstable();
                v.dedup();
                Some(v)
            }
            Err(e) => return Err(e.to_string()),
        };
        match verdict {
            None => return grouped(procs, sg, budget_cuts, leaf_cuts).map(Some),
            Some(callees) if !callees.is_empty() => {
                for q in callees {
                    budget_cuts += sg
                        .program()
                        .sites()
                        .iter()
                        .enumerate()
                        .filter(|(i, s)| {
                            s.callee == Callee::Proc(ProcId::from_index(q))
                                && sg.calls().roles().get(*i) == Some(&SiteRole::Interprocedural)
                        })
                        .count() as u32;
                    cut.insert(q);
                }
                sg = sg.with_cut(|q| cut.contains(&q.index()));
            }
            Some(_) => {
                return Err(format!(
                    "the module has more than {budget} interprocedural paths even with every call cut; use path mode"
                ))
            }
        }
    }
}

/// The plan with its functions ordered so that functions joined by calls are adjacent
/// (`pathprof_core::interproc::units::component_order`): the storage units are then as fine as the calls allow,
/// whatever the module's order. The order changes no call site's classification, and no cut.
fn grouped(procs: Vec<ProcPlan>, sg: Supergraph, budget_cuts: u32, leaf_cuts: u32) -> Result<ProgramPlan, String> {
    let order = component_order(sg.program());
    if order.iter().enumerate().all(|(i, p)| p.index() == i) {
        return Ok(ProgramPlan { procs, supergraph: sg, budget_cuts, leaf_cuts });
    }
    let supergraph = sg.permuted(&order).ok_or("internal error: the grouping is no permutation")?;
    let mut new_index = vec![0; order.len()];
    for (i, p) in order.iter().enumerate() {
        new_index[p.index()] = i;
    }
    let mut slots: Vec<Option<ProcPlan>> = procs.into_iter().map(Some).collect();
    let mut grouped = Vec::with_capacity(slots.len());
    for p in &order {
        let mut plan = slots[p.index()].take().ok_or("internal error: a function placed twice")?;
        for s in &mut plan.site_calls {
            s.callee = new_index[s.callee];
        }
        grouped.push(plan);
    }
    Ok(ProgramPlan { procs: grouped, supergraph, budget_cuts, leaf_cuts })
}

/// Builds the core program, every call site followed (the budget policy cuts with `Supergraph::with_cut`).
fn build_program(procs: &[ProcPlan]) -> Result<Program, String> {
    let out = procs
        .iter()
        .map(|p| {
            let call_sites = p
                .site_calls
                .iter()
                .map(|s| CallSite { block: s.block, callee: Callee::Proc(ProcId::from_index(s.callee)) })
                .collect();
            Procedure {
                cfg: p.graph.cfg.clone(),
                call_sites,
                external_entry: p.external_entry,
                cut_vertices: p.cut_vertices.clone(),
                reset_headers: p.reset_headers.clone(),
            }
        })
        .collect();
    Program::new(out).map_err(|e| format!("internal error: {e}"))
}

/// Why `f` cannot be part of the program, if it cannot.
/// `max_own_paths` bounds the function's own Ball–Larus paths (its paths with every call cut), leaving room in
/// the budget for the rest of the module: a function above it is profiled in path mode or not at all.
fn admissible(f: LLVMValueRef, facts: &CallFacts, mode: Mode, max_own_paths: u128) -> Result<(), String> {
    let g = cfg_build::build(f, facts).map_err(|u| u.0)?;
    if g.returns_twice_calls.iter().any(|&c| ir::opcode(c) != LLVMOpcode::LLVMCall) {
        return Err("it invokes setjmp (a returns_twice function) from an exception scope".into());
    }
    let cfg = &g.cfg;
    let adj = cfg.adjacency();
    let dfs = depth_first(cfg, &adj);
    // Before the call blocks are split. Splitting after a call leaves the block's tail, with its out-edges, free
    // of site calls, and cutting at that tail cuts the same paths as cutting here, so any block may be cut.
    own_path_cuts(&g, &adj, &dfs, mode, max_own_paths, &vec![false; cfg.num_vertices()], |_| false)?;
    for e in cfg.edge_ids() {
        let edge = cfg.edge(e);
        if !matches!(edge.kind, EdgeKind::Branch { .. }) || !dfs.is_reachable(edge.from) {
            continue;
        }
        match g.sites[e.index()] {
            Site::None => return Err(format!("edge {e} cannot carry code")),
            Site::TargetPhi if mode == Mode::Piecewise && dfs.is_back_edge(e) => {
                return Err(format!("back edge {e} cannot carry piecewise code"))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The loop headers of `g` to reset (`adj` and `dfs` are its graph's; `call_blocks` its call sites' blocks):
/// `pathprof_core::ball_larus::resets::interproc_loop_resets`, for loops whose entries and back edges can
/// carry code of their own (an edge only a PHI can count takes no restart), a call site being opaque.
fn resets(g: &FunctionGraph, adj: &Adjacency, dfs: &DfsInfo, call_blocks: &HashSet<BlockId>) -> Vec<bool> {
    let carries_code =
        |e: EdgeId| matches!(g.sites.get(e.index()), Some(Site::SourceEnd | Site::TargetStart | Site::Split));
    let eligible = |l: &NaturalLoop| adj.in_edges(l.header).iter().all(|&e| carries_code(e));
    interproc_loop_resets(&g.cfg, adj, dfs, &eligible, &|b| call_blocks.contains(&b))
}

/// The cut vertices that bring `g`'s own paths (every call cut) to at most `max_own_paths` with the loops `reset`
/// marks reset (`adj` and `dfs` are its graph's): none when they fit already, in which case `keep` is never
/// asked; never a block `keep` names, nor, in piecewise mode, one with a branch that only a PHI can count
/// (like a back edge, a cut branch restarts the piece; a `Termination` edge, which goes to EXIT, is never a cut
/// edge). An error when no such cut is enough.
fn own_path_cuts(
    g: &FunctionGraph,
    adj: &Adjacency,
    dfs: &DfsInfo,
    mode: Mode,
    max_own_paths: u128,
    reset: &[bool],
    keep: impl Fn(BlockId) -> bool,
) -> Result<Vec<BlockId>, String> {
    let phi_counted = |b: BlockId| {
        mode == Mode::Piecewise
            && adj.out_edges(b).iter().any(|&e| {
                matches!(g.cfg.edge(e).kind, EdgeKind::Branch { .. })
                    && matches!(g.sites.get(e.index()), Some(Site::TargetPhi | Site::None))
            })
    };
    PathDag::build_with_budget_resetting(&g.cfg, adj, dfs, max_own_paths, |b| keep(b) || phi_counted(b), reset)
        .map(|dag| dag.cut_vertices().to_vec())
        .map_err(|_| {
            format!(
                "it has more than {max_own_paths} acyclic paths of its own, too many for interprocedural numbering \
                 even with cuts (profile it in path mode)"
            )
        })
}

/// The instruction just before `call` if an earlier call of its block may leave the frame abnormally.
fn abnormal_call_before(call: LLVMValueRef, facts: &CallFacts) -> Option<LLVMValueRef> {
    let prev = unsafe { LLVMGetPreviousInstruction(call) };
    let mut i = prev;
    while !i.is_null() {
        if matches!(ir::opcode(i), LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke) && facts.may_leave_abnormally(i) {
            return Some(prev);
        }
        i = unsafe { LLVMGetPreviousInstruction(i) };
    }
    None
}

/// A direct plain call of a program function that may be entered through call sites (`site_callees`: the
/// members without a `musttail` call) whose callee is sure to be this module's copy: the caller hands its path
/// to the callee through this module's thread-locals, so a callee the linker may take from another module (an
/// inline function's ODR copy, an interposable definition) would leave the handoff unread and the caller's path
/// would silently go on without the callee's part.
fn is_site_call(i: LLVMValueRef, site_callees: &HashSet<LLVMValueRef>) -> bool {
    ir::opcode(i) == LLVMOpcode::LLVMCall
        && !ir::is_musttail(i)
        && !ir::calls_inline_asm(i)
        && ir::called_function(i).is_some_and(|f| site_callees.contains(&f) && ir::runs_own_definition(f))
        && unsafe {
            // The callee must not also be passed as an argument (then it escapes).
            let n = LLVMGetNumArgOperands(i);
            (0..n).all(|k| Some(LLVMGetOperand(i, k)) != ir::called_function(i))
        }
}

/// Whether `f` may be entered other than through one of our call sites: every use of it must be the callee of
/// a site call. A use as an *argument* of a site call (`visit(&f)`, where `visit` is a site's callee) hands
/// out its address like any other use, and `f` may then be called through it.
fn is_externally_entered(f: LLVMValueRef, site_calls: &HashSet<LLVMValueRef>) -> bool {
    let linkage = unsafe { LLVMGetLinkage(f) };
    if !matches!(linkage, LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage) {
        return true;
    }
    unsafe {
        let mut u = LLVMGetFirstUse(f);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            // A site call never also passes its callee as an argument (`is_site_call`), so a site call that
            // calls `f` uses it only as its callee.
            if !site_calls.contains(&user) || ir::called_function(user) != Some(f) {
                return true;
            }
            u = LLVMGetNextUse(u);
        }
    }
    false
}

/// The function's graph with `resume` edges as `Termination` edges: an exception leaving the function does not
/// return to the caller's return site, so the path in flight ends there (and is counted there). A block that
/// also holds a call that may leave abnormally already has its `Termination` edge: the `resume` edge is
/// dropped, so the block has one — every arrival there ends the path at that block, by the call or by the
/// `resume`, and one arrival count before the call says so.
pub fn build_graph(f: LLVMValueRef, facts: &CallFacts) -> Result<FunctionGraph, String> {
    let mut g = cfg_build::build(f, facts).map_err(|u| u.0)?;
    let terminated: HashSet<BlockId> =
        g.cfg.edges().iter().filter(|e| e.kind == EdgeKind::Termination).map(|e| e.from).collect();
    let mut edges = Vec::with_capacity(g.cfg.num_edges());
    let mut sites = Vec::with_capacity(g.cfg.num_edges());
    for (e, &site) in g.cfg.edges().iter().zip(&g.sites) {
        let resume = e.kind == EdgeKind::Return
            && ir::terminator(g.blocks[e.from.index()]).is_some_and(|t| ir::opcode(t) == LLVMOpcode::LLVMResume);
        match resume {
            true if terminated.contains(&e.from) => {}
            true => {
                edges.push(Edge { kind: EdgeKind::Termination, ..*e });
                sites.push(Site::None);
            }
            false => {
                edges.push(*e);
                sites.push(site);
            }
        }
    }
    g.cfg = Cfg::new(g.cfg.num_blocks() as u32, edges).map_err(|e| e.to_string())?;
    g.sites = sites;
    Ok(g)
}
