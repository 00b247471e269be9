//! Melski–Reps context and piecewise profiling, emission: the runtime state of §5.5/§6.3 in LLVM IR.
//!
//! State, per thread (module-local `thread_local` globals, so the program's ABI does not change):
//! - `path` and `nvc`: at a call site the caller stores `pathNum` and ψ_r(numValidCompsFromExit) there and the
//!   callee loads them at entry; at return the callee stores `pathNum` and the caller loads it after the call
//!   (`pathNum` is passed by reference, NVC by value).
//! - `token`: the callee the caller announced. A function that may also be entered from outside the program
//!   (a root) checks `token == self` at entry: announced → continue the caller's path; otherwise start its own
//!   path at its Entry_global offset with NVC = 1. Functions only ever entered through call sites skip it.
//! - piecewise: a callee that returns with no open call (an unbalanced return) sets the top bit of the pathNum
//!   it hands back, and the caller adds the Eq. 35 edge value and resets its NVC to numUnbalRLPaths.
//!
//! Per activation: `pathNum` lives in an `alloca` (SROA promotes it at -O1 and above), NVC and
//! `pathNumOnEntry` are SSA values (piecewise NVC is an `alloca`: back edges and unbalanced returns change it;
//! a recursive function with a loop and many ρ(NVC) products reads NVC from a `volatile` slot, so that LLVM
//! does not hoist all the products to its entry).
//! Piecewise: the paper's `cntOpenLfParens` is a global counter (+1 before a call, −1 at a balanced return, 0
//! at a back edge), but only `cnt == 0` is ever tested, and in an activation that holds exactly when the
//! current piece began in it (a back edge) or came up from a callee (an unbalanced return) since its entry.
//! So each activation keeps that as a local flag (an `alloca` SROA promotes): no thread-local traffic around
//! calls, and nothing to repair when an exception or `longjmp` skips frames.
//! A recursive or cut call site keeps the pending path in the caller's `alloca` while the callee runs its own
//! paths. Edge code: ρ = ⟨0,0⟩ emits nothing, ⟨0,b⟩ a constant add, otherwise one multiply-add (§5.5.1).
//!
//! Paths cut short are counted as in path mode, by *arrivals*: `count[path + ρ_t(NVC)]` +1 before the first
//! call of a block that may not return, and nothing once it returned — the reader nets the executions that
//! went on (`pathprof_core::interproc::arrivals`). An interprocedural call block counts nothing: its only call
//! that may leave is the site call, and the callee counts the path where it actually ends, with its calling
//! context. A `resume` is a termination edge here.
//!
//! Loops: a back edge's count tests its slot against the one or two slots its loop repeats
//! (`FnEmitter::tested_slots`) and counts a match at an address computed once in the entry block, which
//! [`crate::promote`] keeps in a register for the loop's duration; any other slot is counted in memory.

use crate::cfg_build::Site;
use crate::emit::HotSlots;
use crate::interproc_plan::ProcPlan;
use crate::ir;
use crate::promote::{LocalCount, LocalCounts};
use crate::shim;
use crate::storage::Sink;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMIntPredicate, LLVMLinkage, LLVMOpcode, LLVMThreadLocalMode};
use pathprof_core::ball_larus::promoted_dag_paths;
use pathprof_core::dag::{CfgEdgeRole, DagEdgeId};
use pathprof_core::interproc::potentials::{shifted, Shift};
use pathprof_core::interproc::{counted_termination, ArcKind, ExitTarget, Linear, Mode, Numbering, ProcId, SiteRole};
use pathprof_core::{BlockId, EdgeId, EdgeKind};
use pathprof_format::symbols;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::CString;

/// The module's thread-local handoff variables.
pub struct Tls {
    path: LLVMValueRef,
    nvc: LLVMValueRef,
    token: LLVMValueRef,
}

/// Piecewise: the bit of the pathNum a callee hands back that says it returned with no open call (path numbers
/// are below the budget, at most 2^63, so the top bit is free).
const UNBALANCED: u64 = 1 << 63;

impl Tls {
    /// Emits the variables (module-local, initial value 0).
    pub fn new(m: LLVMModuleRef) -> Tls {
        unsafe {
            let ctx = LLVMGetModuleContext(m);
            let i64t = LLVMInt64TypeInContext(ctx);
            let ptrt = LLVMPointerTypeInContext(ctx, 0);
            let var = |name: &str, ty: LLVMTypeRef| {
                let c = CString::new(name).expect("no NUL");
                let g = LLVMAddGlobal(m, ty, c.as_ptr());
                LLVMSetInitializer(g, LLVMConstNull(ty));
                LLVMSetLinkage(g, LLVMLinkage::LLVMInternalLinkage);
                LLVMSetThreadLocalMode(g, LLVMThreadLocalMode::LLVMLocalDynamicTLSModel);
                LLVMSetAlignment(g, 8);
                g
            };
            Tls {
                path: var(symbols::IP_PATH, i64t),
                nvc: var(symbols::IP_NVC, i64t),
                token: var(symbols::IP_TOKEN, ptrt),
            }
        }
    }
}

/// How an activation of a function can begin.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum EntryShape {
    /// Only from outside (a root without interprocedural callers).
    Root,
    /// Only through call sites.
    Site,
    /// Either: checked at entry.
    Both,
}

/// Code for one cfg edge, run in order when the edge is taken.
#[derive(Clone, Copy, Debug)]
enum Action {
    /// `path += ρ(NVC)`.
    AddPath(Linear),
    /// Back edge: record `path + ρ_exit(NVC)`, restart the path (context: `pathNumOnEntry + ρ_entry(NVC)`).
    Restart { exit: Linear, entry: Linear },
    /// Piecewise back edge: record `path + ρ_exit(NVC)`; `NVC = unbal`, `path = start`, the activation's
    /// piece is unbalanced from here on.
    RestartPiecewise { exit: Linear, start: u64 },
}

/// What a guarded piece of code does.
#[derive(Clone, Copy, Debug)]
enum Guarded {
    /// Counts a path: `count[slot] += 1`.
    Count(LLVMValueRef),
    /// Hands the path number back to the caller that announced the call (`__pathprof_ip_path = value`).
    HandBack(LLVMValueRef),
}

/// More distinct ρ(NVC) products than this (about the registers LLVM can keep them in) make a recursive
/// function with a loop read NVC opaquely (see `FnEmitter::opaque_nvc_wanted`). Lua's `match` needs ~40: its
/// instructions fell by 39% (lua-tables-strings: 6.5% fewer in all); at 3 or 8 nothing else changed.
const OPAQUE_NVC_MIN_PRODUCTS: usize = 8;

/// Each cfg edge's actions, plus the return and termination edges with their ρ.
struct EdgeActions {
    actions: Vec<Vec<Action>>,
    returns: Vec<(EdgeId, Linear)>,
    terminations: Vec<(EdgeId, Linear)>,
}

/// Emits the instrumentation of one function of the program.
pub struct FnEmitter<'a> {
    b: LLVMBuilderRef,
    i64t: LLVMTypeRef,
    i1t: LLVMTypeRef,
    tls: &'a Tls,
    sink: &'a Sink<'a>,
    num: &'a Numbering<'a>,
    p: ProcId,
    plan: &'a ProcPlan,
    functions: &'a [LLVMValueRef],
    piecewise: bool,
    /// Piecewise: the activation's "no call of the current piece is open" flag (`i1` slot).
    unbalanced: Option<LLVMValueRef>,
    path: LLVMValueRef,
    nvc_slot: Option<LLVMValueRef>,
    nvc_volatile: bool,
    nvc: LLVMValueRef,
    on_entry: LLVMValueRef,
    via_site: Option<LLVMValueRef>,
    shape: EntryShape,
    /// Code that runs only in a root activation or only in one entered through a call site, each behind a
    /// branch on `via_site`: (condition, insertion point, what).
    guarded: Vec<(LLVMValueRef, LLVMValueRef, Guarded)>,
    /// Whether the function calls nothing but itself, through recursive sites ([`FnEmitter::calls_only_itself`]):
    /// its returns' code then goes before the calls that end it.
    self_recursive_leaf: bool,
    /// Per block that counts arrivals: its truncated path's number (what a fork re-entry records).
    arrival_keys: Vec<Option<LLVMValueRef>>,
    /// Per cfg edge: the slots its back-edge count tests for, as (slot number, its address computed at entry);
    /// see [`FnEmitter::tested_slots`].
    tested: Vec<Vec<(LLVMValueRef, LLVMValueRef)>>,
    /// Back-edge counts that test for `tested` slots, split last: (insertion point, slot, cfg edge).
    pending_tests: Vec<(LLVMValueRef, LLVMValueRef, EdgeId)>,
    /// For a function of a unit with a hash table that promotion may touch: its counts at constant path
    /// numbers and its loops' tested paths, kept in local slots ([`crate::promote::LocalCount`]).
    locals: Option<LocalCounts>,
    /// The entry block's first instruction of the function's own, right after the prologue.
    body_start: LLVMValueRef,
    /// Per block, the potential its `pathNum` carries ([`crate::interproc_place`]): the variable holds the
    /// path's number so far plus φ(block)(NVC); code that ends or hands on a path subtracts it.
    phi: Vec<Shift>,
}

/// How many paths a back edge's count tests for (each costs a compare per iteration), as in path mode.
const TESTED_PATHS_PER_EDGE: usize = 2;

/// What an instruction of function `f` calls, for the functions that call only themselves.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum CallKind {
    /// Not a call.
    NotACall,
    /// A direct `call` of `f` itself.
    Own,
    /// A `call` of an intrinsic that runs no program code and cannot leave.
    PlainIntrinsic,
    /// Anything else that calls: another function, through a pointer, inline assembly, `invoke`, `callbr`.
    Other,
}

fn call_kind(i: LLVMValueRef, f: LLVMValueRef) -> CallKind {
    match ir::opcode(i) {
        LLVMOpcode::LLVMCall => match ir::called_function(i) {
            Some(g) if g == f => CallKind::Own,
            Some(g) if ir::intrinsic_id(g) != 0 && !ir::intrinsic_is_call_site(g) => CallKind::PlainIntrinsic,
            _ => CallKind::Other,
        },
        LLVMOpcode::LLVMInvoke | LLVMOpcode::LLVMCallBr => CallKind::Other,
        _ => CallKind::NotACall,
    }
}

/// The blocks of a function that calls only itself as [`FnEmitter::return_points`] walks them, gathered once
/// per function.
struct ReturnWalk {
    /// Each block's predecessors (each once).
    preds: HashMap<LLVMBasicBlockRef, Vec<LLVMBasicBlockRef>>,
    entry: LLVMBasicBlockRef,
    /// The activation's path state: the path slot, and the NVC and piecewise-flag slots where there are any.
    state: Vec<LLVMValueRef>,
}

/// Whether `bb` branches to `to` and nowhere else.
fn only_successor(bb: LLVMBasicBlockRef, to: LLVMBasicBlockRef) -> bool {
    ir::terminator(bb).is_some_and(|t| ir::successors(t).iter().all(|&s| s == to))
}

fn k(i64t: LLVMTypeRef, v: u64) -> LLVMValueRef {
    unsafe { LLVMConstInt(i64t, v, 0) }
}

/// Path numbers fit in 63 bits (the budget), so every ρ and ψ value does too.
fn lo(x: u128) -> u64 {
    x as u64
}

/// What [`FnEmitter::emit`] leaves to the module.
pub struct Emitted {
    /// Per block that counts arrivals, the number of its truncated path (what a fork re-entry of the block's
    /// calls records, see [`crate::fork_check`]).
    pub arrival_keys: Vec<Option<LLVMValueRef>>,
    /// Whether the function calls only itself and checks at entry whether it was announced: its recursive calls
    /// can go to a copy that does not check ([`call_root_copy_for_recursion`], once the function is final).
    pub wants_root_copy: bool,
    /// The loop paths of a hashed unit counted in local slots, for [`crate::promote::flush_local_counts`].
    pub local_counts: Vec<LocalCount>,
}

impl<'a> FnEmitter<'a> {
    /// Emits everything for function `p` (`phi`: its blocks' potentials, [`crate::interproc_place`]).
    #[allow(clippy::too_many_arguments)] // the module's shared state, the function and two placement inputs
    pub fn emit(
        tls: &'a Tls,
        sink: &'a Sink<'a>,
        num: &'a Numbering<'a>,
        functions: &'a [LLVMValueRef],
        p: ProcId,
        plan: &'a ProcPlan,
        promote: bool,
        phi: Vec<Shift>,
    ) -> Emitted {
        let counters = sink.counters();
        let b = counters.builder();
        let i64t = unsafe { LLVMTypeOf(counters.const_index(0)) };
        let i1t = unsafe { LLVMInt1TypeInContext(LLVMGetTypeContext(i64t)) };
        let sg = num.supergraph();
        let is_root = sg.calls().is_root(p);
        let has_callers = !sg.calls().callers(p).is_empty();
        let shape = match (is_root, has_callers) {
            (true, false) => EntryShape::Root,
            (false, _) => EntryShape::Site,
            (true, true) => EntryShape::Both,
        };
        let null = unsafe { LLVMConstNull(i64t) };
        let mut em = FnEmitter {
            b,
            i64t,
            i1t,
            tls,
            sink,
            num,
            p,
            plan,
            functions,
            piecewise: num.mode() == Mode::Piecewise,
            unbalanced: None,
            path: null,
            nvc_slot: None,
            nvc_volatile: false,
            nvc: null,
            on_entry: null,
            via_site: None,
            shape,
            guarded: Vec::new(),
            self_recursive_leaf: false,
            arrival_keys: vec![None; plan.graph.cfg.num_blocks()],
            tested: vec![Vec::new(); plan.graph.cfg.num_edges()],
            pending_tests: Vec::new(),
            locals: None,
            body_start: null,
            phi,
        };
        let actions = em.edge_actions();
        em.self_recursive_leaf = em.calls_only_itself();
        em.nvc_volatile = !em.piecewise && em.opaque_nvc_wanted(&actions);
        em.prologue();
        let promotes = promote && crate::promote::eligible(plan.f, &plan.graph);
        if promotes && matches!(sink, Sink::Hashed { .. }) {
            em.locals = Some(LocalCounts::new(b, plan.graph.blocks[0]));
        }
        if promote && !em.nvc_volatile {
            em.tested = em.tested_slots();
        }
        em.body(actions);
        em.finish_guarded();
        em.finish_tests();
        em.keep_across_returns_twice();
        let wants_root_copy = em.self_recursive_leaf && em.shape == EntryShape::Both;
        let local_counts = em.locals.map(LocalCounts::into_counts).unwrap_or_default();
        Emitted { arrival_keys: em.arrival_keys, wants_root_copy, local_counts }
    }

    /// After a `longjmp` back to a `setjmp` call, the activation's non-volatile memory written since that call
    /// is indeterminate (C11 7.13.2.1), and without optimisation the `path`, piecewise `nvc` and `unbalanced`
    /// slots stay in memory, holding what the abandoned rest of the path left there. So each `returns_twice`
    /// call copies them, right before it, into slots of its own that nothing else writes, and copies them
    /// back right after it: nothing changes on the first return, and the second resumes the path at the call,
    /// as path mode's SSA path register does. (SSA values — NVC in context mode, `pathNumOnEntry` — need
    /// nothing: they are never written again.) The reader nets the re-entered block's extra completions like
    /// path mode's (`FunctionMeta::reentry_blocks`).
    fn keep_across_returns_twice(&mut self) {
        let mut slots = vec![(self.path, self.i64t)];
        slots.extend(self.nvc_slot.map(|s| (s, self.i64t)));
        slots.extend(self.unbalanced.map(|s| (s, self.i1t)));
        for &call in &self.plan.graph.returns_twice_calls {
            for &(slot, ty) in &slots {
                unsafe {
                    LLVMPositionBuilderBeforeInstrAndDbgRecords(self.b, self.path);
                    let saved = LLVMBuildAlloca(self.b, ty, c"pathprof.setjmp_saved".as_ptr());
                    LLVMPositionBuilderBefore(self.b, call);
                    let v = LLVMBuildLoad2(self.b, ty, slot, c"".as_ptr());
                    LLVMBuildStore(self.b, v, saved);
                    LLVMPositionBuilderBefore(self.b, LLVMGetNextInstruction(call));
                    let v = LLVMBuildLoad2(self.b, ty, saved, c"".as_ptr());
                    LLVMBuildStore(self.b, v, slot);
                }
            }
        }
    }

    /// Per back edge in a promotion region, the slots of the (at most [`TESTED_PATHS_PER_EDGE`]) paths its loop
    /// repeats (`pathprof_core::ball_larus::promoted_dag_paths`), computed once in the entry block: a path
    /// that starts at a reset inside the loop and runs through branches only (no call site: the callee would
    /// extend it) ends in slot `pathNumOnEntry + Σρ(NVC)` in context mode — invariant for the activation — and
    /// in a constant slot in piecewise mode, where a reset sets `path = start` and `NVC = numUnbalRLPaths`.
    /// Counting a match there lets [`crate::promote`] keep the count in a register.
    fn tested_slots(&self) -> Vec<Vec<(LLVMValueRef, LLVMValueRef)>> {
        let g = &self.plan.graph;
        let cfg = &g.cfg;
        let mut out = vec![Vec::new(); cfg.num_edges()];
        if !crate::promote::eligible(self.plan.f, g) {
            return out;
        }
        let regions = pathprof_core::promotion::promotion_regions(cfg, &crate::promote::blocked_blocks(g));
        if regions.is_empty() {
            return out;
        }
        let dag = self.num.supergraph().dag(self.p);
        let site_blocks: HashSet<BlockId> = self.plan.site_calls.iter().map(|s| s.block).collect();
        let usable = |d: DagEdgeId| match self.num.arc_of(self.p, d).map(|a| a.kind) {
            Some(ArcKind::Branch { .. }) => !site_blocks.contains(&dag.edge(d).from),
            Some(ArcKind::BackEdgeExit { .. } | ArcKind::LoopRestart { .. }) => true,
            _ => false,
        };
        let paths = promoted_dag_paths(cfg, dag, &regions, TESTED_PATHS_PER_EDGE, &usable);
        let unbal = self.num.num_unbal_rl_paths(self.p);
        let mid = self.num.mid_entry(self.p).map_or(0, |g| self.num.local_offset(g));
        let first = self.body_start; // after the prologue, which defines pathNumOnEntry and NVC
        let counters = self.sink.counters();
        for (e, paths) in paths.iter().enumerate() {
            for path in paths {
                // Σρ along the path: ρ_entry of its reset, ρ of its branches, ρ_exit of the back edge.
                let sum = path.iter().try_fold(Linear::ZERO, |acc, &d| {
                    let rho = self.num.arc_of(self.p, d)?.rho;
                    Some(Linear::new(acc.a.checked_add(rho.a)?, acc.b.checked_add(rho.b)?))
                });
                let Some(sum) = sum else { continue };
                let slot = if self.piecewise {
                    // start = ρ_entry(unbal) + mid, then every ρ at NVC = unbal.
                    match sum.checked_apply(unbal).and_then(|v| v.checked_add(mid)) {
                        Some(v) if v < UNBALANCED as u128 => self.konst(lo(v)),
                        _ => continue,
                    }
                } else {
                    self.at(first);
                    self.plus(self.on_entry, sum)
                };
                let address = match (self.sink, &self.locals) {
                    (Sink::Dense { .. }, _) => counters.address_before(first, self.dense_index(first, slot)),
                    (Sink::Hashed { .. }, Some(locals)) => locals.slot(slot),
                    (Sink::Hashed { .. }, None) => continue,
                };
                out[e].push((slot, address));
            }
        }
        out
    }

    /// The deferred back-edge counts: `if slot == s₁ count s₁ else if … else count[slot]`. Last, because they
    /// split blocks that the other code was placed in by position.
    fn finish_tests(&mut self) {
        for (at, slot, e) in std::mem::take(&mut self.pending_tests) {
            let hot_slots = if self.locals.is_some() { HotSlots::Local } else { HotSlots::Counters };
            let rest = self.sink.counters().count_if_hot(at, slot, &self.tested[e.index()], hot_slots);
            self.count(rest, slot, self.konst(1));
        }
    }

    fn konst(&self, v: u64) -> LLVMValueRef {
        k(self.i64t, v)
    }

    fn at(&self, before: LLVMValueRef) {
        unsafe { LLVMPositionBuilderBefore(self.b, before) }
    }

    fn load(&self, ptr: LLVMValueRef, ty: LLVMTypeRef) -> LLVMValueRef {
        unsafe { LLVMBuildLoad2(self.b, ty, ptr, c"".as_ptr()) }
    }

    fn store_to(&self, v: LLVMValueRef, ptr: LLVMValueRef) {
        unsafe {
            LLVMBuildStore(self.b, v, ptr);
        }
    }

    fn add(&self, x: LLVMValueRef, y: LLVMValueRef) -> LLVMValueRef {
        unsafe { LLVMBuildAdd(self.b, x, y, c"pathprof.ip".as_ptr()) }
    }

    /// NVC at the builder's position.
    fn nvc_here(&self) -> LLVMValueRef {
        match self.nvc_slot {
            Some(s) => {
                let v = self.load(s, self.i64t);
                if self.nvc_volatile {
                    unsafe { LLVMSetVolatile(v, 1) };
                }
                v
            }
            None => self.nvc,
        }
    }

    /// `f(NVC)` at the builder's position; `None` for ⟨0,0⟩.
    fn lin(&self, f: Linear) -> Option<LLVMValueRef> {
        if f == Linear::ZERO {
            return None;
        }
        if f.a == 0 {
            return Some(self.konst(lo(f.b)));
        }
        let n = self.nvc_here();
        let prod = if f.a == 1 { n } else { unsafe { LLVMBuildMul(self.b, n, self.konst(lo(f.a)), c"".as_ptr()) } };
        Some(if f.b == 0 { prod } else { self.add(prod, self.konst(lo(f.b))) })
    }

    /// `x + f(NVC)` at the builder's position.
    fn plus(&self, x: LLVMValueRef, f: Linear) -> LLVMValueRef {
        match self.lin(f) {
            Some(v) => self.add(x, v),
            None => x,
        }
    }

    /// Where path `slot` (numbered within the storage unit) counts in the unit's array or region, built before
    /// `before`: the unit's first counter plus the number (the constant folds into the address).
    fn dense_index(&self, before: LLVMValueRef, slot: LLVMValueRef) -> LLVMValueRef {
        match self.sink {
            Sink::Dense { base, .. } if *base != 0 => {
                self.at(before);
                self.add(slot, self.konst(*base))
            }
            _ => slot,
        }
    }

    /// `count[slot] += delta` before `before`; a hash table's count at a constant slot goes to a local slot,
    /// which a loop keeps in a register until it exits.
    fn count(&self, before: LLVMValueRef, slot: LLVMValueRef, delta: LLVMValueRef) {
        match &self.locals {
            Some(locals) if unsafe { !LLVMIsAConstantInt(slot).is_null() } => locals.count(before, slot, delta),
            _ => self.sink.add_before(before, slot, delta),
        }
    }

    /// Whether this function reads NVC from a `volatile` stack slot wherever an edge value needs it, instead of
    /// using the SSA value. Every `ρ(NVC) = a·NVC + b` is loop-invariant, so LLVM hoists the products out of
    /// loops to the function entry and spills them: a recursive function with a loop (Lua's `match`, whose
    /// `goto init` is a loop) then computes and stores dozens of products on every call although a call
    /// takes few of its edges. A volatile read keeps each product at its edge (a load and a multiply-add
    /// there). Only for functions that call themselves and need many products: in a long-running loop
    /// (an interpreter's dispatch loop) the hoisted products are cheaper.
    fn opaque_nvc_wanted(&self, acts: &EdgeActions) -> bool {
        let mut has_loop = false;
        let mut products: HashSet<Linear> = HashSet::new();
        let mut note = |f: Linear| {
            if f.a > 1 {
                products.insert(f);
            }
        };
        for a in acts.actions.iter().flatten() {
            match *a {
                Action::AddPath(f) => note(f),
                Action::Restart { exit, entry } => {
                    has_loop = true;
                    note(exit);
                    note(entry);
                }
                Action::RestartPiecewise { exit, .. } => note(exit),
            }
        }
        for &(_, f) in acts.returns.iter().chain(&acts.terminations) {
            note(f);
        }
        let program = self.num.supergraph().program();
        let calls_itself = program
            .sites_of(self.p)
            .any(|s| program.site(s).is_some_and(|i| i.callee == pathprof_core::interproc::Callee::Proc(self.p)));
        has_loop && calls_itself && products.len() > OPAQUE_NVC_MIN_PRODUCTS
    }

    fn prologue(&mut self) {
        let g = &self.plan.graph;
        let entry_bb = g.blocks[0];
        let first = unsafe { LLVMGetFirstInstruction(entry_bb) };
        self.body_start = first;
        let offset = self.num.root_entry(self.p).map_or(0, |e| lo(self.num.local_offset(e)));
        unsafe {
            LLVMPositionBuilderBeforeInstrAndDbgRecords(self.b, first);
            self.path = LLVMBuildAlloca(self.b, self.i64t, c"pathprof.path".as_ptr());
            if self.piecewise || self.nvc_volatile {
                self.nvc_slot = Some(LLVMBuildAlloca(self.b, self.i64t, c"pathprof.nvc".as_ptr()));
            }
            if self.piecewise {
                self.unbalanced = Some(LLVMBuildAlloca(self.b, self.i1t, c"pathprof.unbalanced".as_ptr()));
            }
            let ptrt = LLVMTypeOf(self.tls.token);
            let (path0, nvc0) = match self.shape {
                EntryShape::Root => (self.konst(offset), self.konst(1)),
                EntryShape::Site => (self.load(self.tls.path, self.i64t), self.load(self.tls.nvc, self.i64t)),
                EntryShape::Both => {
                    let tok = self.load(self.tls.token, ptrt);
                    let via =
                        LLVMBuildICmp(self.b, LLVMIntPredicate::LLVMIntEQ, tok, self.plan.f, c"pathprof.via".as_ptr());
                    self.store_to(LLVMConstNull(ptrt), self.tls.token);
                    self.via_site = Some(via);
                    let tp = self.load(self.tls.path, self.i64t);
                    let tn = self.load(self.tls.nvc, self.i64t);
                    (
                        LLVMBuildSelect(self.b, via, tp, self.konst(offset), c"".as_ptr()),
                        LLVMBuildSelect(self.b, via, tn, self.konst(1), c"".as_ptr()),
                    )
                }
            };
            self.store_to(path0, self.path);
            self.on_entry = path0;
            match self.nvc_slot {
                Some(s) => self.store_to(nvc0, s),
                None => self.nvc = nvc0,
            }
            if let Some(slot) = self.unbalanced {
                // Entered through a call site, that call is open; a root opens its own "(".
                self.store_to(LLVMConstInt(self.i1t, 0, 0), slot);
            }
        }
    }

    /// `rho` on an edge that ends the path at a block of potential 0 (a return, a termination, a back edge's
    /// exit): less the potential of the block it leaves.
    fn ending(&self, rho: Linear, from: BlockId) -> Linear {
        (Shift::of(rho) - self.phi[from.index()]).as_linear()
    }

    fn edge_actions(&self) -> EdgeActions {
        let cfg = &self.plan.graph.cfg;
        let dag = self.num.supergraph().dag(self.p);
        let mut actions: Vec<Vec<Action>> = vec![Vec::new(); cfg.num_edges()];
        let mut returns: Vec<(EdgeId, Linear)> = Vec::new();
        let mut terminations: Vec<(EdgeId, Linear)> = Vec::new();
        for e in cfg.edge_ids() {
            match dag.cfg_edge_role(e) {
                CfgEdgeRole::Real(d) => {
                    let Some(arc) = self.num.arc_of(self.p, d).copied() else { continue };
                    let edge = cfg.edge(e);
                    match arc.kind {
                        ArcKind::Branch { .. } => {
                            let rho = shifted(arc.rho, &self.phi, edge.from, edge.to).as_linear();
                            if rho != Linear::ZERO {
                                actions[e.index()].push(Action::AddPath(rho))
                            }
                        }
                        ArcKind::Return { .. } => returns.push((e, self.ending(arc.rho, edge.from))),
                        ArcKind::Termination { .. } => terminations.push((e, self.ending(arc.rho, edge.from))),
                        _ => {}
                    }
                }
                CfgEdgeRole::Back { exit, entry } | CfgEdgeRole::Cut { exit, entry } => {
                    let (Some(x), Some(n)) = (self.num.arc_of(self.p, exit), self.num.arc_of(self.p, entry)) else {
                        continue;
                    };
                    let edge = cfg.edge(e);
                    let exit_rho = self.ending(x.rho, edge.from);
                    let header = self.phi[edge.to.index()];
                    if self.piecewise {
                        let unbal = self.num.num_unbal_rl_paths(self.p);
                        let mid = self.num.mid_entry(self.p).map_or(0, |g| self.num.local_offset(g));
                        let start = n.rho.checked_apply(unbal).and_then(|r| r.checked_add(mid)).unwrap_or(0);
                        // The restarted piece runs with NVC = unbal: the header's potential at that NVC.
                        let start = lo(start).wrapping_add(header.apply(lo(unbal)));
                        actions[e.index()].push(Action::RestartPiecewise { exit: exit_rho, start });
                    } else {
                        let entry_rho = (Shift::of(n.rho) + header).as_linear();
                        actions[e.index()].push(Action::Restart { exit: exit_rho, entry: entry_rho });
                    }
                }
                CfgEdgeRole::Unreachable | CfgEdgeRole::ExitToEntry(_) => {}
            }
        }
        EdgeActions { actions, returns, terminations }
    }

    fn body(&mut self, acts: EdgeActions) {
        let g = &self.plan.graph;
        let cfg = &g.cfg;
        let sg = self.num.supergraph();
        let dag = sg.dag(self.p);
        let program = sg.program();
        let site_call_of_block: BTreeMap<u32, LLVMValueRef> =
            self.plan.site_calls.iter().map(|s| (s.block.0, s.call)).collect();
        let EdgeActions { actions, returns, terminations } = acts;

        // 2. Edge code first: later code goes before calls and terminators, after anything placed here.
        self.place(&actions);

        // 3. Truncated paths: one arrival, before the first call that may not return (the terminator if none).
        for &(e, rho) in &terminations {
            let edge = *cfg.edge(e);
            let counted = counted_termination(self.num, self.p, edge.from);
            if !counted.is_some_and(|a| a.kind == (ArcKind::Termination { edge: e })) {
                continue; // an interprocedural call block: the callee counts the path
            }
            // A counted block holds no interprocedural site call (the plan gives each its own block), so its
            // first call that may leave is where the arrival goes — also in a landing pad that calls and then
            // resumes (`interproc_plan::build_graph` keeps one termination edge for both ways out): counted at
            // the `resume`, an arrival whose call does not return would be lost, and the key, computed after
            // the block's guarded calls, would not dominate their fork re-entry checks.
            let bb = g.blocks[edge.from.index()];
            let first_call = g.abnormal_calls[edge.from.index()].first().copied();
            let before = first_call.or_else(|| ir::terminator(bb)).expect("checked when building");
            self.at(before);
            let cur = self.load(self.path, self.i64t);
            let slot = self.plus(cur, rho);
            self.count(before, slot, self.konst(1));
            self.arrival_keys[edge.from.index()] = Some(slot);
        }

        // 4. Call sites.
        for s in program.sites_of(self.p) {
            let Some(info) = program.site(s).copied() else { continue };
            let Some(&call) = site_call_of_block.get(&info.block.0) else { continue };
            let role = sg.calls().role(s);
            let after = unsafe { LLVMGetNextInstruction(call) };
            match role {
                SiteRole::Interprocedural => {
                    let pathprof_core::interproc::Callee::Proc(q) = info.callee else { continue };
                    let psi_r = self.num.psi(self.p, info.ret);
                    self.at(call);
                    let cur = self.load(self.path, self.i64t);
                    self.store_to(cur, self.tls.path);
                    let n = self.plus(self.konst(0), psi_r);
                    self.store_to(n, self.tls.nvc);
                    if sg.calls().is_root(q) {
                        self.store_to(self.functions[q.index()], self.tls.token);
                    }
                    self.at(after);
                    let back = self.load(self.tls.path, self.i64t);
                    if self.piecewise {
                        // The top bit of the handed-back pathNum flags an unbalanced return (path numbers < 2^63).
                        let is_unb = unsafe {
                            LLVMBuildICmp(self.b, LLVMIntPredicate::LLVMIntSLT, back, self.konst(0), c"".as_ptr())
                        };
                        let bare = unsafe { LLVMBuildAnd(self.b, back, self.konst(UNBALANCED - 1), c"".as_ptr()) };
                        let value = self.num.exit_value(q, ExitTarget::Site(s)).unwrap_or(0);
                        let inc = unsafe {
                            LLVMBuildSelect(self.b, is_unb, self.konst(lo(value)), self.konst(0), c"".as_ptr())
                        };
                        let p2 = self.add(bare, inc);
                        self.store_to(p2, self.path);
                        let slot = self.nvc_slot.expect("piecewise");
                        let old = self.load(slot, self.i64t);
                        let unbal_p = self.konst(lo(self.num.num_unbal_rl_paths(self.p)));
                        let nv = unsafe { LLVMBuildSelect(self.b, is_unb, unbal_p, old, c"".as_ptr()) };
                        self.store_to(nv, slot);
                        let flag = self.unbalanced.expect("piecewise");
                        let was = self.load(flag, self.i1t);
                        self.store_to(unsafe { LLVMBuildOr(self.b, was, is_unb, c"".as_ptr()) }, flag);
                    } else {
                        self.store_to(back, self.path);
                    }
                }
                SiteRole::Recursive | SiteRole::Cut | SiteRole::External => {
                    // The pending path stays in our alloca; the summary edge's value (0: first arc) follows.
                    let rho = match dag.cfg_edge_role(info.call_edge) {
                        CfgEdgeRole::Real(d) => self.num.arc_of(self.p, d).map_or(Linear::ZERO, |a| a.rho),
                        _ => Linear::ZERO,
                    };
                    if rho != Linear::ZERO {
                        self.at(after);
                        let cur = self.load(self.path, self.i64t);
                        let v = self.plus(cur, rho);
                        self.store_to(v, self.path);
                    }
                }
                SiteRole::Dead => {}
            }
        }

        // 5. Returns (before the `ret`, or before a `musttail` call); in a function that calls only itself,
        // before the recursive calls that end their way.
        let walk = self.self_recursive_leaf.then(|| self.return_walk());
        for &(e, rho) in &returns {
            let bb = g.blocks[cfg.edge(e).from.index()];
            let at = ir::source_end_insertion_point(bb).expect("terminator");
            self.emit_return(at, rho, walk.as_ref());
        }
    }

    /// A return's code: count the path (a root activation), hand it back (an activation entered through a
    /// call site), or whichever applies ([`EntryShape::Both`]). In a function that calls only itself, at each
    /// of [`FnEmitter::return_points`], with the hand-back behind a branch too: the recursive calls after those
    /// points are root activations, which must not overwrite the number handed back before them.
    fn emit_return(&mut self, at: LLVMValueRef, rho: Linear, walk: Option<&ReturnWalk>) {
        if let Some(walk) = walk {
            for point in self.return_points(walk, at) {
                self.emit_return_at(point, rho, true);
            }
        } else {
            self.emit_return_at(at, rho, false);
        }
    }

    fn emit_return_at(&mut self, at: LLVMValueRef, rho: Linear, guard_hand_back: bool) {
        self.at(at);
        let cur = self.load(self.path, self.i64t);
        let mut path = self.plus(cur, rho);
        let not_via = |em: &Self| -> Option<LLVMValueRef> {
            em.via_site.map(|v| unsafe { LLVMBuildNot(em.b, v, c"pathprof.root".as_ptr()) })
        };
        if !self.piecewise {
            match self.shape {
                EntryShape::Root => self.count(at, path, self.konst(1)),
                EntryShape::Both => {
                    if guard_hand_back {
                        let via = self.via_site.expect("dynamic entry");
                        self.guarded.push((via, at, Guarded::HandBack(path)));
                    } else {
                        self.store_to(path, self.tls.path);
                    }
                    let cond = not_via(self).expect("dynamic entry");
                    self.guarded.push((cond, at, Guarded::Count(path)));
                }
                EntryShape::Site => self.store_to(path, self.tls.path),
            }
            return;
        }
        let unb = self.load(self.unbalanced.expect("piecewise"), self.i1t);
        // As a callee: report an unbalanced return.
        let flag = unsafe { LLVMBuildSelect(self.b, unb, self.konst(UNBALANCED), self.konst(0), c"".as_ptr()) };
        // As a root: the Exit_P→Exit_global value when no call is open.
        let global = self.num.exit_value(self.p, ExitTarget::Global).unwrap_or(0);
        let root_path = |em: &Self, path: LLVMValueRef| unsafe {
            let inc = LLVMBuildSelect(em.b, unb, em.konst(lo(global)), em.konst(0), c"".as_ptr());
            em.add(path, inc)
        };
        match self.shape {
            EntryShape::Site => {
                let handed = unsafe { LLVMBuildOr(self.b, path, flag, c"".as_ptr()) };
                self.store_to(handed, self.tls.path);
            }
            EntryShape::Root => {
                path = root_path(self, path);
                self.count(at, path, self.konst(1));
            }
            EntryShape::Both => unsafe {
                let via = self.via_site.expect("dynamic entry");
                let rp = root_path(self, path);
                if guard_hand_back {
                    let handed = LLVMBuildOr(self.b, path, flag, c"".as_ptr());
                    self.guarded.push((via, at, Guarded::HandBack(handed)));
                } else {
                    let f = LLVMBuildSelect(self.b, via, flag, self.konst(0), c"".as_ptr());
                    let handed = LLVMBuildOr(self.b, path, f, c"".as_ptr());
                    self.store_to(handed, self.tls.path);
                }
                let cond = not_via(self).expect("dynamic entry");
                self.guarded.push((cond, at, Guarded::Count(rp)));
            },
        }
    }

    /// Whether the function calls nothing but itself, through recursive sites (fib, Ackermann, a walk over a
    /// tree that calls nothing else), and no call may leave abnormally or return twice. Its recursive calls are
    /// then root activations of itself, which hand nothing back when their code does so only behind the entry
    /// check ([`FnEmitter::emit_return`]), and the pending path waits in the caller's frame: nothing the calls
    /// do changes the number a return counts or hands back, and they all return. So that code can run before
    /// the calls that end the return's way, as in path mode (`path_mode::return_count_site`), and LLVM can turn
    /// the last of them into a loop as it does in the plain build (`n < 2 ? n : fib(n - 1) + fib(n - 2)`: 2.66×
    /// IR PGO's instructions in the interprocedural modes with the code after the calls).
    fn calls_only_itself(&self) -> bool {
        if self.shape == EntryShape::Site {
            return false;
        }
        let g = &self.plan.graph;
        if !g.reentry_blocks.is_empty() || g.abnormal_calls.iter().any(|calls| !calls.is_empty()) {
            return false;
        }
        let sg = self.num.supergraph();
        let program = sg.program();
        let own = pathprof_core::interproc::Callee::Proc(self.p);
        let sites_recursive = program.sites_of(self.p).all(|s| {
            program.site(s).is_some_and(|i| i.callee == own) && matches!(sg.calls().role(s), SiteRole::Recursive)
        });
        sites_recursive
            && ir::blocks(self.plan.f)
                .into_iter()
                .flat_map(ir::instructions)
                .all(|i| call_kind(i, self.plan.f) != CallKind::Other)
    }

    /// Where the code of the return whose code would go before `at` can go instead, in a function that calls
    /// only itself: before the first of the recursive calls that end the return's way — walking back from `at`
    /// through the instructions before it and, from a block's start, into every predecessor when each of them
    /// branches only there — so long as nothing on the way writes the activation's path state (its path, NVC or
    /// piecewise flag) or calls anything but the function. Every execution that passes such a point reaches the
    /// return (the calls return; the blocks have one way on), and with the same path state. `at` itself when
    /// no recursive call is passed.
    fn return_points(&self, walk: &ReturnWalk, at: LLVMValueRef) -> Vec<LLVMValueRef> {
        self.points_before(walk, at, &mut HashSet::new(), 0).0
    }

    /// What [`FnEmitter::return_points`] walks, for this function.
    fn return_walk(&self) -> ReturnWalk {
        let blocks = ir::blocks(self.plan.f);
        let mut preds: HashMap<LLVMBasicBlockRef, Vec<LLVMBasicBlockRef>> = HashMap::new();
        for &bb in &blocks {
            let Some(term) = ir::terminator(bb) else { continue };
            for t in ir::successors(term) {
                let list = preds.entry(t).or_default();
                if !list.contains(&bb) {
                    list.push(bb);
                }
            }
        }
        let state = [Some(self.path), self.nvc_slot, self.unbalanced].into_iter().flatten().collect();
        ReturnWalk { preds, entry: blocks[0], state }
    }

    /// [`FnEmitter::return_points`] from `end` back: the points, and whether a recursive call was passed.
    fn points_before(
        &self,
        walk: &ReturnWalk,
        end: LLVMValueRef,
        visited: &mut HashSet<LLVMBasicBlockRef>,
        depth: usize,
    ) -> (Vec<LLVMValueRef>, bool) {
        /// Blocks walked back through, at most: straight-line recursions have a handful.
        const MAX_DEPTH: usize = 16;
        let bb = unsafe { LLVMGetInstructionParent(end) };
        let mut first_call = None;
        let mut reached_start = true;
        let mut i = unsafe { LLVMGetPreviousInstruction(end) };
        while !i.is_null() && ir::opcode(i) != LLVMOpcode::LLVMPHI {
            let writes_state =
                ir::opcode(i) == LLVMOpcode::LLVMStore && walk.state.contains(&unsafe { LLVMGetOperand(i, 1) });
            let kind = call_kind(i, self.plan.f);
            if writes_state || kind == CallKind::Other {
                reached_start = false;
                break;
            }
            if kind == CallKind::Own {
                first_call = Some(i);
            }
            i = unsafe { LLVMGetPreviousInstruction(i) };
        }
        let here = || match first_call {
            Some(c) => (vec![c], true),
            None => (vec![end], false),
        };
        if !reached_start || bb == walk.entry || depth >= MAX_DEPTH || !visited.insert(bb) {
            return here();
        }
        let Some(ps) = walk.preds.get(&bb).filter(|ps| !ps.is_empty()) else { return here() };
        if !ps.iter().all(|&p| p != bb && only_successor(p, bb)) {
            return here();
        }
        let mut points = Vec::new();
        let mut passed = false;
        for &p in ps {
            let term = ir::terminator(p).expect("a predecessor ends in its branch");
            let (pts, call) = self.points_before(walk, term, visited, depth + 1);
            points.extend(pts);
            passed |= call;
        }
        if passed {
            (points, true)
        } else {
            here()
        }
    }

    /// Runs `acts` at the builder's position (`before`), starting from path value `cur`; returns the path value
    /// after them, the slot to count (an edge ends at most one path: its back edge's) and whether a piecewise
    /// back edge restarted the piece — all as values, without emitting counts or state.
    fn evaluate(&self, before: LLVMValueRef, acts: &[Action]) -> (LLVMValueRef, Option<LLVMValueRef>, bool) {
        self.at(before);
        let mut cur = self.load(self.path, self.i64t);
        let mut counted = None;
        let mut piecewise_restart = false;
        for a in acts {
            match *a {
                Action::AddPath(f) => cur = self.plus(cur, f),
                Action::Restart { exit, entry } => {
                    assert!(counted.replace(self.plus(cur, exit)).is_none(), "an edge ends at most one path");
                    cur = self.plus(self.on_entry, entry);
                }
                Action::RestartPiecewise { exit, start, .. } => {
                    assert!(counted.replace(self.plus(cur, exit)).is_none(), "an edge ends at most one path");
                    cur = self.konst(start);
                    piecewise_restart = true;
                }
            }
        }
        (cur, counted, piecewise_restart)
    }

    /// Places every edge's actions at its site: in the source or target block, on a split edge, or through PHIs
    /// in a target whose incoming edges cannot be split.
    fn place(&mut self, actions: &[Vec<Action>]) {
        let g = &self.plan.graph;
        let cfg = &g.cfg;
        let via = g.split_edges(|e| !actions[e.index()].is_empty() && g.sites[e.index()] == Site::Split);
        let mut phi_targets: BTreeMap<usize, ()> = BTreeMap::new();
        for e in cfg.edge_ids() {
            let acts = &actions[e.index()];
            if acts.is_empty() {
                continue;
            }
            let edge = cfg.edge(e);
            let at = match (via[e.index()], g.sites[e.index()]) {
                (Some(s), _) => ir::terminator(s),
                (None, Site::SourceEnd) => ir::source_end_insertion_point(g.blocks[edge.from.index()]),
                (None, Site::TargetStart) => ir::first_insertion_point(g.blocks[edge.to.index()]),
                (None, Site::TargetPhi) => {
                    phi_targets.insert(edge.to.index(), ());
                    continue;
                }
                (None, Site::Split | Site::None) => unreachable!("planning rejected edges without a site"),
            };
            let at = at.expect("a block has a terminator");
            self.apply_at(at, acts, e);
        }
        for (v, ()) in phi_targets {
            self.place_by_phi(v, actions, &via);
        }
    }

    fn apply_at(&mut self, at: LLVMValueRef, acts: &[Action], e: EdgeId) {
        let (cur, counted, restart) = self.evaluate(at, acts);
        match counted {
            Some(slot) if !self.tested[e.index()].is_empty() => self.pending_tests.push((at, slot, e)),
            Some(slot) => self.count(at, slot, self.konst(1)),
            None => {}
        }
        self.at(at);
        self.store_to(cur, self.path);
        if restart {
            self.restart_piecewise_state();
        }
    }

    /// Piecewise, after a back edge (at the builder's position): NVC = numUnbalRLPaths and the activation's
    /// piece is unbalanced.
    fn restart_piecewise_state(&self) {
        let unbal = self.num.num_unbal_rl_paths(self.p);
        self.store_to(self.konst(lo(unbal)), self.nvc_slot.expect("piecewise"));
        self.store_to(unsafe { LLVMConstInt(self.i1t, 1, 0) }, self.unbalanced.expect("piecewise"));
    }

    fn place_by_phi(&self, v: usize, actions: &[Vec<Action>], via: &[Option<LLVMBasicBlockRef>]) {
        let g = &self.plan.graph;
        let cfg = &g.cfg;
        let adj = cfg.adjacency();
        let bb = g.blocks[v];
        struct In {
            from: LLVMBasicBlockRef,
            path: LLVMValueRef,
            counted: Option<LLVMValueRef>,
        }
        let mut ins = Vec::new();
        for &e in adj.in_edges(BlockId(v as u32)) {
            if !matches!(cfg.edge(e).kind, EdgeKind::Branch { .. }) {
                continue;
            }
            let from = via[e.index()].unwrap_or(g.blocks[cfg.edge(e).from.index()]);
            let term = ir::terminator(from).expect("terminator");
            let own: &[Action] = if g.sites[e.index()] == Site::TargetPhi { &actions[e.index()] } else { &[] };
            let (path, counted, restarts) = self.evaluate(term, own);
            // Planning leaves piecewise functions whose back edges would need PHIs to path mode.
            assert!(!restarts, "a piecewise back edge at a PHI site");
            ins.push(In { from, path, counted });
        }
        // One slot/delta PHI pair when some incoming edge ends a path: the others add 0 to slot 0.
        let any_count = ins.iter().any(|i| i.counted.is_some());
        unsafe {
            LLVMPositionBuilderBeforeInstrAndDbgRecords(self.b, LLVMGetFirstInstruction(bb));
            let phi = |name: &std::ffi::CStr| LLVMBuildPhi(self.b, self.i64t, name.as_ptr());
            let path_phi = phi(c"pathprof.ip.path");
            let count_phis = any_count.then(|| (phi(c"pathprof.ip.slot"), phi(c"pathprof.ip.delta")));
            for i in &ins {
                let mut blocks = [i.from];
                let mut pv = [i.path];
                LLVMAddIncoming(path_phi, pv.as_mut_ptr(), blocks.as_mut_ptr(), 1);
                if let Some((sp, dp)) = count_phis {
                    let mut sv = [i.counted.unwrap_or(self.konst(0))];
                    let mut dv = [self.konst(u64::from(i.counted.is_some()))];
                    LLVMAddIncoming(sp, sv.as_mut_ptr(), blocks.as_mut_ptr(), 1);
                    LLVMAddIncoming(dp, dv.as_mut_ptr(), blocks.as_mut_ptr(), 1);
                }
            }
            let at = ir::first_insertion_point(bb).expect("terminator");
            if let Some((sp, dp)) = count_phis {
                self.count(at, sp, dp);
            }
            self.at(at);
            self.store_to(path_phi, self.path);
        }
    }

    /// The counts that only a root activation makes, each behind a branch.
    fn finish_guarded(&mut self) {
        for (cond, at, what) in std::mem::take(&mut self.guarded) {
            let then_term = unsafe { shim::pathprof_shim_if_then(cond, at) };
            match what {
                Guarded::Count(slot) => self.count(then_term, slot, self.konst(1)),
                Guarded::HandBack(value) => {
                    self.at(then_term);
                    self.store_to(value, self.tls.path);
                }
            }
        }
    }
}

/// Gives a function that calls only itself ([`Emitted::wants_root_copy`]) a copy for its recursive calls, and
/// returns it. Such a function can be entered through call sites and from outside, so each activation checks
/// whether its caller announced it: a thread-local load, compare and clear at every entry. Its recursive calls
/// never are announced — the caller cleared the token at its own entry and calls nothing else before them — so
/// they call a copy of the finished, instrumented function whose check is answered `false`: the same code a
/// root activation runs, the same counts, at the cost of path mode's entry (the benchmark's naive Fibonacci,
/// context mode: 57.4 M instructions → 31.5 M, IR PGO's 31.4 M). The copy is internal, named
/// `NAME.pathprof.root`, and calls itself. `None` (nothing changed) when the check is not found where the emitter
/// puts it.
pub fn call_root_copy_for_recursion(f: LLVMValueRef, tls: &Tls) -> Option<LLVMValueRef> {
    let name = CString::new(format!("{}.pathprof.root", ir::name(f))).ok()?;
    let copy = unsafe { shim::pathprof_shim_clone_function(f, name.as_ptr()) };
    let insts: Vec<LLVMValueRef> = ir::blocks(copy).into_iter().flat_map(ir::instructions).collect();
    let reads_token = |v: LLVMValueRef| unsafe { !LLVMIsALoadInst(v).is_null() && LLVMGetOperand(v, 0) == tls.token };
    let checks: Vec<LLVMValueRef> = insts
        .iter()
        .copied()
        .filter(|&i| unsafe {
            ir::opcode(i) == LLVMOpcode::LLVMICmp && LLVMGetOperand(i, 1) == f && reads_token(LLVMGetOperand(i, 0))
        })
        .collect();
    if checks.len() != 1 {
        unsafe { LLVMDeleteFunction(copy) };
        return None;
    }
    unsafe {
        let check = checks[0];
        let token_load = LLVMGetOperand(check, 0);
        LLVMReplaceAllUsesWith(check, LLVMConstInt(LLVMInt1TypeInContext(LLVMGetTypeContext(LLVMTypeOf(check))), 0, 0));
        LLVMInstructionEraseFromParent(check);
        if LLVMGetFirstUse(token_load).is_null() {
            LLVMInstructionEraseFromParent(token_load);
        }
        // The clear of a token that is already clear.
        for i in insts.into_iter().filter(|&i| i != check && i != token_load) {
            if ir::opcode(i) == LLVMOpcode::LLVMStore && LLVMGetOperand(i, 1) == tls.token {
                LLVMInstructionEraseFromParent(i);
            }
        }
    }
    for call in ir::calls_of(f) {
        let caller = unsafe { LLVMGetBasicBlockParent(LLVMGetInstructionParent(call)) };
        if caller == f || caller == copy {
            unsafe { LLVMSetOperand(call, (LLVMGetNumOperands(call) - 1) as u32, copy) };
        }
    }
    Some(copy)
}
