//! Turns one LLVM function into a `pathprof_core::Cfg`, plus what the pass must know to put code on its edges.
//!
//! Invariant: block `i` of the Cfg is the `i`-th block of the function in IR order, and the `Branch { succ }`
//! edges of a block appear in terminator successor order, so the recorded successor order is LLVM's.
//! An `indirectbr` that lists a block twice gets one edge to it (the first entry's `succ`): the entries are
//! the same transfer.

use crate::ir;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use pathprof_core::{BlockId, Cfg, Edge, EdgeId, EdgeKind};
use std::collections::{HashMap, HashSet};

/// Where the code for an edge's counter goes; decided from the unmodified CFG.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Site {
    /// At the end of the source block, before its terminator (the source has one successor, or it is a return;
    /// before a `musttail` call that must stay next to its `ret`).
    SourceEnd,
    /// At the start of the target block, after PHIs and a landing pad (the target has one predecessor edge).
    TargetStart,
    /// On a new block that splits the edge (a `br`/`switch` edge, or an `invoke`'s normal edge).
    Split,
    /// In the target block through a PHI that selects the counter by predecessor: for edges that cannot be
    /// split, such as `invoke` unwind edges into a shared landing pad or `indirectbr` edges.
    TargetPhi,
    /// No code can go on this edge: it must be a spanning-tree edge (termination edges, a parallel edge that
    /// cannot be split).
    None,
}

/// A function's graph and the IR facts the emitter needs.
pub struct FunctionGraph {
    /// The multigraph counters are placed on.
    pub cfg: Cfg,
    /// LLVM block for each real block id.
    pub blocks: Vec<LLVMBasicBlockRef>,
    /// Where each edge's counter code would go (EdgeId order).
    pub sites: Vec<Site>,
    /// Distinct source lines per block in order of first appearance.
    pub block_lines: Vec<Vec<u32>>,
    /// Blocks containing a `returns_twice` call (setjmp): control may re-enter them.
    pub reentry_blocks: Vec<u32>,
    /// The `returns_twice` calls themselves, in block order. After a `longjmp` back to one, the activation's
    /// non-volatile memory written since the call is indeterminate, so a mode that keeps per-activation state
    /// in memory puts it back after each of them.
    pub returns_twice_calls: Vec<LLVMValueRef>,
    /// Per block, in order: the calls that may leave the frame abnormally (or return twice). Their block has
    /// a Termination edge; path mode counts the truncated path around them.
    pub abnormal_calls: Vec<Vec<LLVMValueRef>>,
}

impl FunctionGraph {
    /// Splits every `Branch` edge `which` selects with LLVM's `SplitCriticalEdge`; returns, per edge, the new
    /// block that now carries it (`None` for edges not split). PHIs of the targets are kept right by LLVM.
    pub fn split_edges(&self, which: impl Fn(EdgeId) -> bool) -> Vec<Option<LLVMBasicBlockRef>> {
        let cfg = &self.cfg;
        let mut via = vec![None; cfg.num_edges()];
        for e in cfg.edge_ids() {
            if !which(e) {
                continue;
            }
            let edge = cfg.edge(e);
            let EdgeKind::Branch { succ } = edge.kind else { continue };
            let term = ir::terminator(self.blocks[edge.from.index()]).expect("checked when building");
            let s = unsafe { crate::shim::pathprof_shim_split_edge(term, succ) };
            assert!(!s.is_null(), "LLVM refused to split a critical edge");
            via[e.index()] = Some(s);
        }
        via
    }
}

/// Why a function is left uninstrumented (reported as a warning, never an abort).
#[derive(Debug)]
pub struct Unsupported(pub String);

/// What the pass knows about calls: which ones may leave their frame abnormally, and which return twice.
pub struct CallFacts {
    nounwind: u32,
    willreturn: u32,
    /// Why C++20 coroutines are left out, in modes that leave them out; `None`: a coroutine before its split is
    /// a graph like any function's ([`Self::returns_twice`]).
    coroutines_left_out: Option<&'static str>,
    /// Functions defined in this module, whose definition is the one that runs, that can neither unwind nor
    /// end the program nor longjmp (transitively): calls to them need no termination edge.
    safe: HashSet<LLVMValueRef>,
}

impl CallFacts {
    /// Looks the attribute kinds up and infers the module's safe functions.
    pub fn new(m: LLVMModuleRef) -> CallFacts {
        let mut facts = CallFacts {
            nounwind: ir::attr_kind("nounwind"),
            willreturn: ir::attr_kind("willreturn"),
            coroutines_left_out: None,
            safe: HashSet::new(),
        };
        facts.safe = facts.infer_safe_functions(m);
        facts
    }

    /// What the attributes say, for code that runs in the middle of the optimiser (promotion after inlining),
    /// where no module scan per function is affordable: LLVM's (`nounwind`, `willreturn`, inferred by then for
    /// the callees it could) and [`RETURNS`], which [`Self::mark_safe_functions`] left on the module's safe
    /// functions. LLVM itself never infers `willreturn` for them: their `volatile` counter updates may trap,
    /// as far as LangRef is concerned.
    pub fn from_attributes() -> CallFacts {
        CallFacts {
            nounwind: ir::attr_kind("nounwind"),
            willreturn: ir::attr_kind("willreturn"),
            coroutines_left_out: None,
            safe: HashSet::new(),
        }
    }

    /// The same facts for a mode that leaves C++20 coroutines uninstrumented, for the reason `why`.
    pub fn without_coroutines(self, why: &'static str) -> CallFacts {
        CallFacts { coroutines_left_out: Some(why), ..self }
    }

    /// Marks every safe function with [`RETURNS`], for [`Self::from_attributes`] later in the pipeline. The
    /// property survives optimisation: a safe function can only inline safe callees, and its clones are safe.
    pub fn mark_safe_functions(&self) {
        for &f in &self.safe {
            if !ir::fn_has_string_attr(f, RETURNS) {
                ir::add_string_attr(f, RETURNS);
            }
        }
    }

    /// Optimistic fixpoint: every defined function whose definition cannot be replaced at link time (internal,
    /// ODR, or non-interposable) starts safe; a function stops being safe when it contains `resume`, a
    /// `returns_twice` call, an indirect call, or a call that may leave abnormally (to an unsafe function).
    /// Only ever removes functions, so it terminates; recursion stays safe (an activation that never returns
    /// never leaves abnormally either).
    fn infer_safe_functions(&self, m: LLVMModuleRef) -> HashSet<LLVMValueRef> {
        let mut safe: HashSet<LLVMValueRef> =
            ir::functions(m).into_iter().filter(|&f| !ir::is_declaration(f) && ir::definition_is_final(f)).collect();
        let bodies: Vec<(LLVMValueRef, Vec<LLVMValueRef>)> =
            safe.iter().map(|&f| (f, ir::blocks(f).into_iter().flat_map(ir::instructions).collect())).collect();
        loop {
            let mut changed = false;
            for (f, insts) in &bodies {
                if !safe.contains(f) {
                    continue;
                }
                let unsafe_inst = insts.iter().any(|&i| match ir::opcode(i) {
                    LLVMOpcode::LLVMResume | LLVMOpcode::LLVMCallBr => true,
                    LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke => {
                        self.returns_twice(i) || self.may_leave_abnormally_given(i, &safe)
                    }
                    _ => false,
                });
                if unsafe_inst {
                    safe.remove(f);
                    changed = true;
                }
            }
            if !changed {
                return safe;
            }
        }
    }

    fn has(&self, call: LLVMValueRef, callee: Option<LLVMValueRef>, kind: u32) -> bool {
        ir::call_has_attr(call, kind) || callee.is_some_and(|f| ir::fn_has_attr(f, kind))
    }

    /// A call may leave the frame without returning (exit, longjmp, unwinding through a plain call) unless it
    /// is known to return and not unwind. Debug and other side-effect-free intrinsics are such calls.
    pub fn may_leave_abnormally(&self, call: LLVMValueRef) -> bool {
        self.may_leave_abnormally_given(call, &self.safe)
    }

    fn may_leave_abnormally_given(&self, call: LLVMValueRef, safe: &HashSet<LLVMValueRef>) -> bool {
        if ir::calls_inline_asm(call) {
            return false;
        }
        let callee = ir::called_function(call);
        if let Some(f) = callee {
            if ir::intrinsic_id(f) != 0 {
                let n = ir::name(f);
                // Traps end the program, `__builtin_longjmp` leaves the frame, a coroutine's resumption runs its
                // code, and a coroutine's `llvm.coro.end` returns from the resume and destroy functions CoroSplit
                // makes (only the ramp goes on past it); every other intrinsic returns.
                return n.starts_with("llvm.trap")
                    || n.starts_with("llvm.debugtrap")
                    || n.starts_with("llvm.ubsantrap")
                    || ir::intrinsic_runs_program_code(f)
                    || ir::is_builtin_longjmp(f)
                    || (self.coroutines_left_out.is_none() && n.starts_with("llvm.coro.end"));
            }
            if safe.contains(&f) || ir::fn_has_string_attr(f, RETURNS) {
                return false;
            }
        }
        !(self.has(call, callee, self.nounwind) && self.has(call, callee, self.willreturn))
    }

    /// Control surely goes on to the next instruction (LLVM's `isGuaranteedToTransferExecutionToSuccessor`, the
    /// test its optimiser deletes code before `unreachable` by): not a call other than a side-effect-free
    /// intrinsic, not a volatile store. Calls to functions are never taken to transfer, even `willreturn` ones:
    /// the conservative side, where the block stays an ordinary termination block.
    pub fn surely_transfers(&self, inst: LLVMValueRef) -> bool {
        match ir::opcode(inst) {
            LLVMOpcode::LLVMCall => {
                !ir::calls_inline_asm(inst)
                    && ir::called_function(inst).is_some_and(|f| ir::intrinsic_id(f) != 0)
                    && !self.may_leave_abnormally(inst)
            }
            LLVMOpcode::LLVMStore => !ir::is_volatile(inst),
            LLVMOpcode::LLVMInvoke
            | LLVMOpcode::LLVMCallBr
            | LLVMOpcode::LLVMLandingPad
            | LLVMOpcode::LLVMCatchPad
            | LLVMOpcode::LLVMCleanupPad => false,
            _ => true,
        }
    }

    /// setjmp-like calls return a second time, re-entering their block. So, in effect, does a C++20
    /// coroutine's suspension (`llvm.coro.suspend`, before CoroSplit): the activation goes on past it to the
    /// suspend edge of the switch on its result and returns, and each resumption (or destruction) of the
    /// coroutine — a call of its resume (destroy) function, which CoroSplit makes of a copy of this body —
    /// enters right after the call, at the same switch. Every edge's code runs where the edge is taken, in
    /// whichever copy; the block's extra exits are netted like a `longjmp`'s re-entries.
    pub fn returns_twice(&self, call: LLVMValueRef) -> bool {
        ir::returns_twice(call) || (self.coroutines_left_out.is_none() && ir::is_coro_suspend(call))
    }
}

/// The function attribute that says a function can neither unwind nor end the program nor longjmp
/// ([`CallFacts::mark_safe_functions`]).
pub const RETURNS: &str = "pathprof.returns";

/// Why mode trace leaves a C++20 coroutine (a function LLVM splits after the pass ran) uninstrumented.
pub const COROUTINE_TRACED: &str = "a C++20 coroutine: LLVM splits it into ramp, resume and destroy functions \
                                    after instrumentation, and each resumption would enter its graph in the middle";

/// Why path, context and piecewise modes leave a C++20 coroutine uninstrumented: their per-activation path
/// state would cross each suspension in the coroutine's frame, and code after the `await_suspend` call would read
/// it there — where the coroutine, resumed by `await_suspend` itself or by another thread meanwhile, may have
/// changed it or freed the frame. Edge and block modes keep no state across a suspension.
pub const COROUTINE_PATHS: &str = "a C++20 coroutine: its path state would live in the coroutine frame, which a \
                                   resumption may change or free before the suspending code is done with it \
                                   (edge and block modes count it)";

/// Why a coroutine of another lowering than C++'s (Swift's `retcon` and `async`) is left uninstrumented.
pub const COROUTINE_ABI: &str = "a coroutine of a lowering other than C++'s (`llvm.coro.id`)";

/// Why a function marked `__attribute__((no_profile_instrument_function))` (LLVM's `noprofile`, or
/// `skipprofile`) is left uninstrumented, as LLVM's own instrumentation leaves it: the user asked (code that
/// runs where instrumentation must not, an allocator the runtime calls). Listed, without a warning.
pub const NO_PROFILE: &str = "marked no_profile_instrument_function";

/// Why a naked function is left uninstrumented: it has no prologue, and any instruction added to it would use
/// registers and stack slots its assembly owns (piecewise mode at -O0 changed a program's output).
pub const NAKED: &str = "a naked function: its body is assembly only, and nothing may be added to it";

/// Why a function no defined execution can run is left uninstrumented: its entry block ends in `unreachable`
/// with nothing before it that could leave it (`__builtin_unreachable()`, or a null-pointer store the optimiser
/// turned into one before mode icache instruments). It compiles to no code at all, and a call of it runs on into
/// whatever follows; instrumented, it would run pathprof's entry code and then something else than the plain
/// build runs (cmocka's `test_exception_handler` looped in mode icache). Listed, without a warning.
pub const NO_DEFINED_EXECUTION: &str = "no defined execution runs its body (it ends in `unreachable` from its entry)";

/// Builds the graph of `f`, or says why `f` cannot be instrumented.
pub fn build(f: LLVMValueRef, facts: &CallFacts) -> Result<FunctionGraph, Unsupported> {
    let blocks = ir::blocks(f);
    let n = blocks.len();
    if n == 0 {
        return Err(Unsupported("function has no blocks".into()));
    }
    if ir::fn_has_attr(f, ir::attr_kind("noprofile")) || ir::fn_has_attr(f, ir::attr_kind("skipprofile")) {
        return Err(Unsupported(NO_PROFILE.into()));
    }
    if ir::fn_has_attr(f, ir::attr_kind("naked")) {
        return Err(Unsupported(NAKED.into()));
    }
    if ir::is_presplit_coroutine(f) {
        // CoroSplit later cuts the body into a ramp, a resume and a destroy function; each resumption enters
        // right after a suspension ([`CallFacts::returns_twice`]).
        if let Some(why) = facts.coroutines_left_out {
            return Err(Unsupported(why.into()));
        }
        if !ir::is_switch_lowered_coroutine(f) {
            return Err(Unsupported(COROUTINE_ABI.into()));
        }
    }
    let index: HashMap<LLVMBasicBlockRef, u32> = blocks.iter().enumerate().map(|(i, &b)| (b, i as u32)).collect();
    let exit = BlockId(n as u32);
    let (dead, dead_entry) = dead_blocks(&blocks, &index, facts);
    if dead_entry {
        return Err(Unsupported(NO_DEFINED_EXECUTION.into()));
    }
    let mut edges = Vec::new();
    let mut block_lines = Vec::with_capacity(n);
    let mut reentry_blocks = Vec::new();
    let mut returns_twice_calls = Vec::new();
    let mut abnormal_calls = Vec::with_capacity(n);

    for (bi, &bb) in blocks.iter().enumerate() {
        let src = BlockId(bi as u32);
        let insts = ir::instructions(bb);
        let mut lines = Vec::new();
        let mut leaves_abnormally = false;
        let mut calls = Vec::new();
        for &inst in &insts {
            let line = ir::debug_line(inst);
            if line != 0 && !lines.contains(&line) {
                lines.push(line);
            }
            match ir::opcode(inst) {
                LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke => {
                    // A `musttail` call ends this activation: the Return edge is counted before it
                    // (`ir::source_end_insertion_point`), so the call itself cannot leave the frame abnormally.
                    let musttail = ir::opcode(inst) == LLVMOpcode::LLVMCall && ir::is_musttail(inst);
                    if !musttail && facts.may_leave_abnormally(inst) {
                        leaves_abnormally = true;
                        calls.push(inst);
                    }
                    if facts.returns_twice(inst) {
                        returns_twice_calls.push(inst);
                        leaves_abnormally = true;
                        if calls.last() != Some(&inst) {
                            calls.push(inst);
                        }
                        if !reentry_blocks.contains(&(bi as u32)) {
                            reentry_blocks.push(bi as u32);
                        }
                    }
                }
                LLVMOpcode::LLVMCallBr => return Err(Unsupported("`callbr` (asm goto) is not supported".into())),
                LLVMOpcode::LLVMCatchSwitch
                | LLVMOpcode::LLVMCatchPad
                | LLVMOpcode::LLVMCleanupPad
                | LLVMOpcode::LLVMCatchRet
                | LLVMOpcode::LLVMCleanupRet => {
                    return Err(Unsupported("funclet-based exception handling is not supported".into()))
                }
                _ => {}
            }
        }
        block_lines.push(lines);
        abnormal_calls.push(calls);
        let term = ir::terminator(bb).ok_or_else(|| Unsupported(format!("block {bi} has no terminator")))?;
        if dead[bi] {
            // Never part of a defined execution: no edges, so no code goes here or on the way here.
            continue;
        }
        match ir::opcode(term) {
            LLVMOpcode::LLVMRet | LLVMOpcode::LLVMResume => {
                edges.push(Edge { from: src, to: exit, kind: EdgeKind::Return });
            }
            LLVMOpcode::LLVMUnreachable => {
                // Reaching `unreachable` means the block was left by a call that did not return.
                edges.push(Edge { from: src, to: exit, kind: EdgeKind::Termination });
                leaves_abnormally = false;
            }
            op => {
                // An `indirectbr` may list one block twice (clang lists a label once per `&&label` taken, as
                // oniguruma's matcher takes `&&L_FINISH`): both entries are the same transfer, which no run
                // can tell apart, so the block gets one edge, at the first entry's successor index. The
                // instrumenting modes drop the repeats from the IR first (`module.rs`), so their PHIs match;
                // use mode reads the IR as it is and gets the same graph.
                let one_edge_per_target = op == LLVMOpcode::LLVMIndirectBr;
                let mut targets = HashSet::new();
                for (s, succ) in ir::successors(term).into_iter().enumerate() {
                    let to = *index.get(&succ).ok_or_else(|| Unsupported("successor outside function".into()))?;
                    if dead[to as usize] || (one_edge_per_target && !targets.insert(to)) {
                        continue;
                    }
                    edges.push(Edge { from: src, to: BlockId(to), kind: EdgeKind::Branch { succ: s as u32 } });
                }
            }
        }
        if leaves_abnormally {
            edges.push(Edge { from: src, to: exit, kind: EdgeKind::Termination });
        }
    }
    edges.push(Edge { from: exit, to: BlockId(0), kind: EdgeKind::ExitToEntry });
    let cfg = Cfg::new(n as u32, edges).map_err(|e| Unsupported(format!("malformed CFG: {e}")))?;
    let sites = choose_sites(&cfg, &blocks);
    Ok(FunctionGraph { cfg, blocks, sites, block_lines, reentry_blocks, returns_twice_calls, abnormal_calls })
}

/// Per block: every instruction before its terminator surely passes control on.
fn transfers_on(blocks: &[LLVMBasicBlockRef], facts: &CallFacts) -> Vec<bool> {
    blocks
        .iter()
        .map(|&bb| {
            let insts = ir::instructions(bb);
            insts[..insts.len().saturating_sub(1)].iter().all(|&i| facts.surely_transfers(i))
        })
        .collect()
}

/// Whether block `bi` has no defined execution, given which blocks are known to have none: it passes control
/// on to its terminator (`transfers`), and that is `unreachable` or branches only into such blocks.
fn block_is_dead(
    blocks: &[LLVMBasicBlockRef],
    bi: usize,
    index: &HashMap<LLVMBasicBlockRef, u32>,
    transfers: &[bool],
    dead: &[bool],
) -> bool {
    if !transfers[bi] {
        return false;
    }
    let Some(term) = ir::terminator(blocks[bi]) else { return false };
    match ir::opcode(term) {
        LLVMOpcode::LLVMUnreachable => true,
        LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch => {
            ir::successors(term).iter().all(|s| index.get(s).is_some_and(|&t| dead[t as usize]))
        }
        _ => false,
    }
}

/// Blocks that no defined execution reaches: a block that ends in `unreachable` with nothing before it that could
/// keep control from getting there (no call but side-effect-free intrinsics, no volatile store) — what
/// `__builtin_unreachable()`, gnulib's `assume`, or a switch's impossible default compile to — and, transitively,
/// a branching block all of whose successors are such blocks. The optimiser deletes these blocks and folds the
/// branches into them, and a program that breaks the promise keeps running on the folded code. Code of ours in
/// them (a volatile counter update) would keep them alive: a program that reaches them — undefined behaviour
/// that its plain build survives, like sed's regex inserting an element already present — would then fall off
/// the end of the function. So they get no edges and no code; the counts they would carry are zero in every
/// defined execution. The entry block is never dead here (a function must have a path to EXIT: when the entry
/// has no defined execution, the second value says so and [`build`] leaves the function out,
/// [`NO_DEFINED_EXECUTION`]), nor is a block a live block cannot avoid.
fn dead_blocks(
    blocks: &[LLVMBasicBlockRef],
    index: &HashMap<LLVMBasicBlockRef, u32>,
    facts: &CallFacts,
) -> (Vec<bool>, bool) {
    let transfers = transfers_on(blocks, facts);
    let mut dead = vec![false; blocks.len()];
    loop {
        let mut changed = false;
        for bi in 1..blocks.len() {
            if !dead[bi] && block_is_dead(blocks, bi, index, &transfers, &dead) {
                dead[bi] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if !blocks.is_empty() && block_is_dead(blocks, 0, index, &transfers, &dead) {
        return (dead, true);
    }
    // A live block whose successors are all dead is left by a call that does not return (a `noreturn` call
    // split from its `unreachable`, as the interprocedural modes split call blocks): the way on stays an ordinary
    // termination block, so the block keeps an out-edge.
    loop {
        let mut revived = false;
        for (bi, &bb) in blocks.iter().enumerate() {
            if dead[bi] {
                continue;
            }
            let Some(term) = ir::terminator(bb) else { continue };
            let succs: Vec<usize> =
                ir::successors(term).iter().filter_map(|s| index.get(s)).map(|&t| t as usize).collect();
            if !succs.is_empty() && succs.iter().all(|&t| dead[t]) {
                for t in succs {
                    dead[t] = false;
                }
                revived = true;
            }
        }
        if !revived {
            return (dead, false);
        }
    }
}

/// Picks, for every edge, the cheapest place its counter code could go (BL94 §6.1: source block when it has
/// one successor, else target when it has one predecessor, else a split edge).
fn choose_sites(cfg: &Cfg, blocks: &[LLVMBasicBlockRef]) -> Vec<Site> {
    let adj = cfg.adjacency();
    let real_in_degree =
        |v: BlockId| adj.in_edges(v).iter().filter(|&&e| matches!(cfg.edge(e).kind, EdgeKind::Branch { .. })).count();
    cfg.edge_ids()
        .map(|e| {
            let edge = *cfg.edge(e);
            match edge.kind {
                EdgeKind::Termination => Site::None,
                // Counted only when a Termination edge out of the entry block leaves no other choice: the top of
                // the entry block (LLVM entry blocks have no predecessors) counts invocations exactly.
                EdgeKind::ExitToEntry => Site::TargetStart,
                EdgeKind::Return => Site::SourceEnd,
                EdgeKind::Branch { succ } => {
                    let term = ir::terminator(blocks[edge.from.index()]).expect("checked in build");
                    let op = ir::opcode(term);
                    // A `br`/`switch`'s successors into dead blocks do not count: code before the terminator runs
                    // on the way to them too, which no defined execution does. (An `invoke` is a call: code
                    // before it would also run when the call leaves abnormally.)
                    let real_out = if matches!(op, LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch) {
                        adj.out_edges(edge.from)
                            .iter()
                            .filter(|&&o| matches!(cfg.edge(o).kind, EdgeKind::Branch { .. }))
                            .count()
                    } else {
                        ir::successors(term).len()
                    };
                    let parallel = adj
                        .out_edges(edge.from)
                        .iter()
                        .filter(|&&o| cfg.edge(o).to == edge.to && matches!(cfg.edge(o).kind, EdgeKind::Branch { .. }))
                        .count()
                        > 1;
                    if real_out == 1 {
                        Site::SourceEnd
                    } else if real_in_degree(edge.to) == 1 {
                        Site::TargetStart
                    } else if matches!(op, LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch)
                        || (op == LLVMOpcode::LLVMInvoke && succ == 0)
                    {
                        Site::Split
                    } else if !parallel {
                        Site::TargetPhi
                    } else {
                        Site::None
                    }
                }
            }
        })
        .collect()
}
