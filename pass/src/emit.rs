//! Emits counter increments on the chosen edges of one function.
//!
//! Order matters and is fixed: PHI-selected counters first (they read the untouched predecessor lists), then
//! edge splits (LLVM's `SplitCriticalEdge` rewrites the PHIs, ours included), then plain insertions.

use crate::cfg_build::{FunctionGraph, Site};
use crate::config::Config;
use crate::ir;
use crate::shim;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMAtomicOrdering, LLVMAtomicRMWBinOp, LLVMIntPredicate};
use pathprof_core::{EdgeId, EdgeKind};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// How counter updates are emitted: one setting per module, derived from the mode and `--pathprof-atomic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterUpdates {
    /// `atomicrmw add monotonic`: exact when threads count concurrently (`PATHPROF_ATOMIC=1`).
    Atomic,
    /// Plain loads and stores, all `volatile` (path-numbering modes): their slot index is the run-time path
    /// number, which GVN would otherwise try to PHI-translate through every predecessor (quadratic compile time
    /// on big functions); the machine code is the same (`incq mem`), and such counters could not be promoted
    /// to registers anyway.
    Volatile,
    /// Plain loads and stores, `volatile` only outside loops (edge mode, see [`Counters::instrument`]).
    Plain,
}

impl CounterUpdates {
    /// The updates `config` asks for: atomic when requested, else volatile except in edge and block modes.
    pub fn of(config: &Config) -> CounterUpdates {
        if config.atomic {
            CounterUpdates::Atomic
        } else if config.mode.counts_edges() {
            CounterUpdates::Plain
        } else {
            CounterUpdates::Volatile
        }
    }
}

/// The module's counter array and how to bump one of its slots.
pub struct Counters {
    builder: LLVMBuilderRef,
    i64t: LLVMTypeRef,
    array_ty: LLVMTypeRef,
    global: LLVMValueRef,
    updates: CounterUpdates,
    /// A slot no function owns, for PHI entries of edges that are not counted there.
    pub scratch: u64,
    /// For an array the runtime maps (a sparse region): `global` is the word holding its address.
    indirect: Option<Indirect>,
}

/// A counter array whose address the runtime stores in a word of the module (`SparseRegion::cell`): each
/// function that counts in it reads the word once, at its entry ([`Counters::finish_indirect`] adds the call
/// that maps the array when the function runs before the module registered).
struct Indirect {
    len: u64,
    /// Per function, the load of the word at the top of its entry block.
    bases: RefCell<Vec<(LLVMValueRef, LLVMValueRef)>>,
}

/// What happened while instrumenting one function, for statistics.
#[derive(Default, Debug, Clone, Copy)]
pub struct EmitStats {
    /// Edges split to hold a counter.
    pub split_edges: usize,
    /// Edges counted through a PHI in their target.
    pub phi_edges: usize,
}

impl Counters {
    /// Wraps the module's counter global (`[len x i64]`).
    pub fn new(m: LLVMModuleRef, global: LLVMValueRef, len: u64, updates: CounterUpdates, scratch: u64) -> Counters {
        unsafe {
            let ctx = LLVMGetModuleContext(m);
            let i64t = LLVMInt64TypeInContext(ctx);
            Counters {
                builder: LLVMCreateBuilderInContext(ctx),
                i64t,
                array_ty: LLVMArrayType2(i64t, len),
                global,
                updates,
                scratch,
                indirect: None,
            }
        }
    }

    /// Wraps a pointer global `cell` that holds the address of `len` counters the runtime maps (a sparse
    /// region's, `pathprof_format::layout::SparseRegion`).
    pub fn indirect(m: LLVMModuleRef, cell: LLVMValueRef, len: u64, updates: CounterUpdates) -> Counters {
        let mut c = Counters::new(m, cell, len, updates, 0);
        c.indirect = Some(Indirect { len, bases: RefCell::new(Vec::new()) });
        c
    }

    /// Whether slots have addresses only inside functions (no constant addresses: [`Counters::indirect`]).
    pub fn is_indirect(&self) -> bool {
        self.indirect.is_some()
    }

    /// The address of slot `idx` (an i64 value), built before `before`.
    fn element(&self, before: LLVMValueRef, idx: LLVMValueRef, name: &std::ffi::CStr) -> LLVMValueRef {
        match &self.indirect {
            None => unsafe {
                LLVMPositionBuilderBefore(self.builder, before);
                let mut ix = [self.const_index(0), idx];
                LLVMBuildInBoundsGEP2(self.builder, self.array_ty, self.global, ix.as_mut_ptr(), 2, name.as_ptr())
            },
            Some(ind) => {
                let base = self.base_in(ind, before);
                unsafe {
                    LLVMPositionBuilderBefore(self.builder, before);
                    let mut ix = [idx];
                    LLVMBuildInBoundsGEP2(self.builder, self.i64t, base, ix.as_mut_ptr(), 1, name.as_ptr())
                }
            }
        }
    }

    /// The load of the array's address at the top of the entry block of `before`'s function (made once).
    fn base_in(&self, ind: &Indirect, before: LLVMValueRef) -> LLVMValueRef {
        let f = unsafe { LLVMGetBasicBlockParent(LLVMGetInstructionParent(before)) };
        if let Some(&(_, base)) = ind.bases.borrow().iter().find(|(g, _)| *g == f) {
            return base;
        }
        let base = unsafe {
            let entry = LLVMGetEntryBasicBlock(f);
            let first = LLVMGetFirstInstruction(entry);
            LLVMPositionBuilderBeforeInstrAndDbgRecords(self.builder, first);
            let ptrt = LLVMPointerTypeInContext(LLVMGetModuleContext(LLVMGetGlobalParent(f)), 0);
            let load = LLVMBuildLoad2(self.builder, ptrt, self.global, c"pathprof.region".as_ptr());
            LLVMSetAlignment(load, 8);
            load
        };
        ind.bases.borrow_mut().push((f, base));
        base
    }

    /// Completes every function that counts in an indirect array: its static `alloca`s go back above the
    /// address load (they must stay at the top of the entry block for SROA), and a null address — the function
    /// ran before its module registered — is replaced by the runtime's mapping of the array
    /// (`__pathprof_region_counters(cell, len)`, on a cold branch). Call after each function's emitter, before
    /// anything copies the function (the interprocedural modes' root copies).
    pub fn finish_indirect(&self, m: LLVMModuleRef) {
        let Some(ind) = &self.indirect else { return };
        for &(_, base) in ind.bases.borrow().iter() {
            unsafe { self.finish_base(m, ind.len, base) };
        }
        ind.bases.borrow_mut().clear();
    }

    unsafe fn finish_base(&self, m: LLVMModuleRef, len: u64, base: LLVMValueRef) {
        let entry = LLVMGetInstructionParent(base);
        let mut i = LLVMGetNextInstruction(base);
        while !i.is_null() {
            let next = LLVMGetNextInstruction(i);
            // Static allocas only: a variable-length array's size is computed after the load.
            if !LLVMIsAAllocaInst(i).is_null() && !LLVMIsAConstant(LLVMGetOperand(i, 0)).is_null() {
                LLVMInstructionRemoveFromParent(i);
                LLVMPositionBuilderBefore(self.builder, base);
                LLVMInsertIntoBuilder(self.builder, i);
            }
            i = next;
        }
        let ctx = LLVMGetModuleContext(m);
        let ptrt = LLVMPointerTypeInContext(ctx, 0);
        let rest = LLVMGetNextInstruction(base);
        LLVMPositionBuilderBefore(self.builder, rest);
        let null = LLVMBuildICmp(
            self.builder,
            LLVMIntPredicate::LLVMIntEQ,
            base,
            LLVMConstNull(ptrt),
            c"pathprof.region.unmapped".as_ptr(),
        );
        let rest = LLVMGetNextInstruction(null);
        let then_term = shim::pathprof_shim_if_then_cold(null, rest);
        let then_block = LLVMGetInstructionParent(then_term);
        LLVMPositionBuilderBefore(self.builder, then_term);
        let map = crate::globals::region_counters_function(m);
        let mut args = [self.global, self.const_index(len)];
        let mapped = LLVMBuildCall2(
            self.builder,
            LLVMGlobalGetValueType(map),
            map,
            args.as_mut_ptr(),
            2,
            c"pathprof.region.mapped".as_ptr(),
        );
        let tail = LLVMGetInstructionParent(rest);
        LLVMPositionBuilderBefore(self.builder, LLVMGetFirstInstruction(tail));
        let phi = LLVMBuildPhi(self.builder, ptrt, c"pathprof.region.base".as_ptr());
        LLVMReplaceAllUsesWith(base, phi);
        LLVMSetOperand(null, 0, base);
        let mut vals = [base, mapped];
        let mut blocks = [entry, then_block];
        LLVMAddIncoming(phi, vals.as_mut_ptr(), blocks.as_mut_ptr(), 2);
    }

    /// An i64 constant.
    pub fn const_index(&self, idx: u64) -> LLVMValueRef {
        unsafe { LLVMConstInt(self.i64t, idx, 0) }
    }

    /// Address of slot `idx` as a constant expression.
    fn slot(&self, idx: u64) -> LLVMValueRef {
        unsafe {
            let mut ix = [self.const_index(0), self.const_index(idx)];
            LLVMConstInBoundsGEP2(self.array_ty, self.global, ix.as_mut_ptr(), 2)
        }
    }

    /// Emits `counters[idx] += 1` before `before`; `idx` is a constant or an i64 value. `volatile`: see
    /// [`Counters::instrument`].
    fn increment_before(&self, before: LLVMValueRef, idx: Result<u64, LLVMValueRef>, volatile: bool) {
        self.update_before(before, idx, self.const_index(1), volatile)
    }

    /// The builder, for callers that emit their own instructions around counter updates.
    pub fn builder(&self) -> LLVMBuilderRef {
        self.builder
    }

    /// Emits `counters[idx] += delta` before `before` (plain or `atomicrmw add monotonic`); `idx` is a constant
    /// or an i64 value, and `delta` a constant (the path modes add 1 when a path ends; nothing emits a negative
    /// delta since truncated paths count arrivals).
    pub fn add_before(&self, before: LLVMValueRef, idx: Result<u64, LLVMValueRef>, delta: i64) {
        self.add_value_before(before, idx, self.const_index(delta as u64))
    }

    /// The constant address of `counters[slot]`, as [`Counters::count_if_hot`] takes it (an array in the
    /// module only: an indirect one has no constant addresses).
    pub fn constant_address(&self, slot: u64) -> LLVMValueRef {
        debug_assert!(self.indirect.is_none(), "a runtime-mapped array has no constant address");
        self.slot(slot)
    }

    /// The address of `counters[idx]` (an i64 value), built before `before` — in the function's entry block,
    /// where [`crate::promote`] takes it for loop-invariant (a constant `idx` folds to a constant address).
    pub fn address_before(&self, before: LLVMValueRef, idx: LLVMValueRef) -> LLVMValueRef {
        self.element(before, idx, c"pathprof.hot.slot")
    }

    /// Counts `value` (a slot number) before `before` when it is likely one of `hot`, as (slot number, its
    /// address) pairs: `if (value == h₁) *a₁ += 1 else if … ` with updates [`crate::promote`] recognises (never
    /// volatile), or, for [`HotSlots::Local`], plain updates of the emitter's own local slots
    /// ([`crate::promote::LocalCount`]), so that a loop's repeated paths are counted in registers. Returns the
    /// point where a value that matches none goes, for the caller's ordinary count (the path modes' back edges,
    /// see `pathprof_core::ball_larus::promoted_paths`).
    pub fn count_if_hot(
        &self,
        before: LLVMValueRef,
        value: LLVMValueRef,
        hot: &[(LLVMValueRef, LLVMValueRef)],
        slots: HotSlots,
    ) -> LLVMValueRef {
        let mut rest = before;
        for &(slot, address) in hot {
            let (mut then_term, mut else_term) = (std::ptr::null_mut(), std::ptr::null_mut());
            unsafe {
                LLVMPositionBuilderBefore(self.builder, rest);
                let hit =
                    LLVMBuildICmp(self.builder, LLVMIntPredicate::LLVMIntEQ, value, slot, c"pathprof.hot".as_ptr());
                shim::pathprof_shim_if_then_else(hit, rest, &mut then_term, &mut else_term);
                LLVMPositionBuilderBefore(self.builder, then_term);
            }
            match slots {
                HotSlots::Counters => self.update_at(address, self.const_index(1), false),
                // Thread- and activation-private: a plain update, which SROA turns into a register.
                HotSlots::Local => unsafe { add_to_counter(self.builder, address, self.const_index(1), false, false) },
            }
            rest = else_term;
        }
        rest
    }

    /// Emits `counters[idx] += delta` before `before` for a run-time `delta` (an i64 value).
    pub fn add_value_before(&self, before: LLVMValueRef, idx: Result<u64, LLVMValueRef>, delta: LLVMValueRef) {
        self.update_before(before, idx, delta, self.updates == CounterUpdates::Volatile)
    }

    /// The counter global, for code that recognises this module's updates ([`crate::promote`]).
    pub fn global(&self) -> LLVMValueRef {
        self.global
    }

    /// Emits `*address += delta` before `before` for an `address` into the counter global (a constant GEP, as
    /// [`crate::promote`] finds them), with the module's update kind.
    pub fn add_value_at(&self, before: LLVMValueRef, address: LLVMValueRef, delta: LLVMValueRef) {
        unsafe { LLVMPositionBuilderBefore(self.builder, before) };
        self.update_at(address, delta, self.updates == CounterUpdates::Volatile)
    }

    fn update_before(&self, before: LLVMValueRef, idx: Result<u64, LLVMValueRef>, delta: LLVMValueRef, volatile: bool) {
        let ptr = match idx {
            Ok(c) if self.indirect.is_none() => self.slot(c),
            Ok(c) => self.element(before, self.const_index(c), c""),
            Err(v) => self.element(before, v, c""),
        };
        unsafe { LLVMPositionBuilderBefore(self.builder, before) };
        self.update_at(ptr, delta, volatile)
    }

    /// `*ptr += delta` at the builder's position, as this module updates its counters.
    fn update_at(&self, ptr: LLVMValueRef, delta: LLVMValueRef, volatile: bool) {
        unsafe { add_to_counter(self.builder, ptr, delta, self.updates == CounterUpdates::Atomic, volatile) }
    }

    /// Instruments `g`: `chords[i]` gets module counter `base + i`.
    ///
    /// Updates on edges inside a loop stay plain loads and stores, which [`crate::promote`] keeps in a register
    /// for the loop's duration where that is exact (the hot case); every other update is `volatile`, so the
    /// optimiser spends no time
    /// on it (GVN, InstCombine, DSE and LICM otherwise process every counter access: on sqlite3.c the plugin's
    /// compile-time cost drops from +27% to +18%) — the machine code of an update is the same either way, and the
    /// executed instructions of the benchmark programs change by less than 0.2%.
    pub fn instrument(&self, g: &FunctionGraph, chords: &[EdgeId], base: u64) -> EmitStats {
        let mut stats = EmitStats::default();
        let counter_of: BTreeMap<EdgeId, u64> = chords.iter().enumerate().map(|(i, &e)| (e, base + i as u64)).collect();
        let adj = g.cfg.adjacency();
        let dfs = pathprof_core::dfs::depth_first(&g.cfg, &adj);
        let mut in_loop = vec![false; g.cfg.num_vertices()];
        for l in pathprof_core::loops::natural_loops(&g.cfg, &adj, &dfs).loops {
            for v in l.body {
                in_loop[v.index()] = true;
            }
        }
        // An edge is in a loop when both its ends are (a loop exit is not).
        let volatile_edge = |e: EdgeId| {
            let edge = g.cfg.edge(e);
            self.updates == CounterUpdates::Volatile || !(in_loop[edge.from.index()] && in_loop[edge.to.index()])
        };

        // 1. PHI-selected counters, one PHI per target block.
        let mut phi_targets: BTreeMap<usize, ()> = BTreeMap::new();
        for &e in chords {
            if g.sites[e.index()] == Site::TargetPhi {
                phi_targets.insert(g.cfg.edge(e).to.index(), ());
            }
        }
        for &v in phi_targets.keys() {
            let bb = g.blocks[v];
            unsafe {
                let first = LLVMGetFirstInstruction(bb);
                LLVMPositionBuilderBeforeInstrAndDbgRecords(self.builder, first);
                let phi = LLVMBuildPhi(self.builder, self.i64t, c"pathprof.edge".as_ptr());
                for &e in adj.in_edges(pathprof_core::BlockId(v as u32)) {
                    let edge = g.cfg.edge(e);
                    if !matches!(edge.kind, EdgeKind::Branch { .. }) {
                        continue;
                    }
                    let idx = match counter_of.get(&e) {
                        Some(&c) if g.sites[e.index()] == Site::TargetPhi => {
                            stats.phi_edges += 1;
                            c
                        }
                        _ => self.scratch,
                    };
                    let mut vals = [self.const_index(idx)];
                    let mut blocks = [g.blocks[edge.from.index()]];
                    LLVMAddIncoming(phi, vals.as_mut_ptr(), blocks.as_mut_ptr(), 1);
                }
                let at = ir::first_insertion_point(bb).expect("a block has a terminator");
                // The slot is a run-time value: volatile like path mode's.
                self.increment_before(at, Err(phi), true);
            }
        }

        // 2. Splits: the new block holds the counter.
        for &e in chords {
            if g.sites[e.index()] != Site::Split {
                continue;
            }
            let edge = g.cfg.edge(e);
            let EdgeKind::Branch { succ } = edge.kind else { continue };
            let term = ir::terminator(g.blocks[edge.from.index()]).expect("checked when building");
            let new_bb = unsafe { shim::pathprof_shim_split_edge(term, succ) };
            assert!(!new_bb.is_null(), "LLVM refused to split a critical edge the pass classified as splittable");
            stats.split_edges += 1;
            let at = ir::terminator(new_bb).expect("split block ends in a branch");
            self.increment_before(at, Ok(counter_of[&e]), volatile_edge(e));
        }

        // 3. Source-end and target-start insertions.
        for &e in chords {
            let edge = g.cfg.edge(e);
            let at = match g.sites[e.index()] {
                Site::SourceEnd => ir::source_end_insertion_point(g.blocks[edge.from.index()]),
                Site::TargetStart => ir::first_insertion_point(g.blocks[edge.to.index()]),
                Site::Split | Site::TargetPhi => continue,
                Site::None => unreachable!("placement never makes an uninstrumentable edge a chord"),
            };
            self.increment_before(at.expect("a block has a terminator"), Ok(counter_of[&e]), volatile_edge(e));
        }
        stats
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        unsafe { LLVMDisposeBuilder(self.builder) }
    }
}

/// Where [`Counters::count_if_hot`]'s matches are counted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HotSlots {
    /// In the counters themselves, updated as the module updates its counters ([`crate::promote`] moves them
    /// into registers).
    Counters,
    /// In function-local slots (`alloca`s), updated plainly.
    Local,
}

/// `*ptr += delta` (an i64 counter) at `builder`'s position: `atomicrmw add monotonic`, or a plain load, add and
/// store (`volatile` or not). The one way pathprof writes a counter update; promotion's flushes use it too.
///
/// # Safety
/// `builder` is positioned in a function; `ptr` addresses an i64 and `delta` is an i64 value of its context.
pub(crate) unsafe fn add_to_counter(
    builder: LLVMBuilderRef,
    ptr: LLVMValueRef,
    delta: LLVMValueRef,
    atomic: bool,
    volatile: bool,
) {
    unsafe {
        if atomic {
            LLVMBuildAtomicRMW(
                builder,
                LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpAdd,
                ptr,
                delta,
                LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
                0,
            );
        } else {
            let old = LLVMBuildLoad2(builder, LLVMTypeOf(delta), ptr, c"pathprof.count".as_ptr());
            LLVMSetAlignment(old, 8);
            let new = LLVMBuildAdd(builder, old, delta, c"pathprof.count.next".as_ptr());
            let store = LLVMBuildStore(builder, new, ptr);
            LLVMSetAlignment(store, 8);
            if volatile {
                LLVMSetVolatile(old, 1);
                LLVMSetVolatile(store, 1);
            }
        }
    }
}
