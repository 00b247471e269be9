//! Counter promotion: counter updates inside loops that nothing can observe from inside accumulate in
//! function-local slots, and go back to the counters on the edges that leave the loop.
//!
//! Which loops, and where the counts go back, is [`pathprof_core::promotion`]'s decision; this module finds the
//! updates the emitter put in those loops (a plain `load`/`add`/`store` of a counter at an address that is the
//! same throughout the loop, or an `atomicrmw add`): edge mode's, and the path modes' counts of the paths a back
//! edge tests for (`pathprof_core::ball_larus::promoted_paths`); it retargets them to an `alloca` per counter, and adds the slots to the counters at the region's
//! exits. The pass runs at the start of the pipeline, so SROA turns the slots into SSA values right after it: the
//! count lives in a register for the loop's duration (LLVM's `PGOCounterPromoter` gets the same with
//! `SSAUpdater`), loops stay vectorisable, and a nest that only counts folds to closed form as in the plain build.
//!
//! Exactness is unchanged: a region contains no call that may not return (exit, longjmp, an exception, fork, a
//! dump), so an activation leaves it only along an exit edge, where every slot is flushed. What a promoted count
//! changes is *when* the counter in memory catches up: a dump by another thread (the interval timer) sees a loop
//! that is running in this one up to its last exit, as it sees none of that loop's in-flight paths in path mode.
//! Functions compiled without optimisation (`optnone`) and functions that call `setjmp` are left alone.

use crate::cfg_build::{self, CallFacts, FunctionGraph};
use crate::emit::Counters;
use crate::{ir, shim};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMAtomicRMWBinOp, LLVMOpcode};
use pathprof_core::promotion::promotion_regions;
use pathprof_core::EdgeKind;
use std::collections::HashMap;

/// One counter update the emitter wrote inside a region.
enum Update {
    /// `%v = load P; %n = add %v, d; store %n, P` — retargeted to the slot in place.
    Plain { load: LLVMValueRef, store: LLVMValueRef },
    /// `atomicrmw add P, d` — replaced by a plain update of the (thread-private) slot.
    Atomic { rmw: LLVMValueRef },
}

/// Promotes the in-loop updates of `f` (already instrumented) to the counters of `counters`; returns how many
/// updates now go to slots. The flushes update the counters as `counters` does (plain or atomic).
pub fn promote(f: LLVMValueRef, counters: &Counters, facts: &CallFacts) -> usize {
    if ir::fn_has_attr(f, ir::attr_kind("optnone")) {
        return 0; // before building the graph: at -O0 every function is optnone
    }
    let Ok(graph) = cfg_build::build(f, facts) else { return 0 };
    if !eligible(f, &graph) {
        return 0;
    }
    let cfg = &graph.cfg;
    let adj = cfg.adjacency();
    let blocked = blocked_blocks(&graph);
    let ctx = unsafe { LLVMGetModuleContext(LLVMGetGlobalParent(f)) };
    let i64t = unsafe { LLVMInt64TypeInContext(ctx) };
    let builder = unsafe { LLVMCreateBuilderInContext(ctx) };
    let entry = ir::blocks(f)[0];
    let mut promoted = 0;
    for region in promotion_regions(cfg, &blocked) {
        // Counters in order of their first update in the region (not by address: pointer values differ from
        // one compile to the next, and the slots' order is the order of their flushes in the IR).
        let mut by_counter: Vec<(LLVMValueRef, Vec<Update>)> = Vec::new();
        let mut index_of: HashMap<LLVMValueRef, usize> = HashMap::new();
        for &b in &region.blocks {
            for inst in ir::instructions(graph.blocks[b.index()]) {
                if let Some((address, update)) = counter_update(inst, counters.global()) {
                    let i = *index_of.entry(address).or_insert_with(|| {
                        by_counter.push((address, Vec::new()));
                        by_counter.len() - 1
                    });
                    by_counter[i].1.push(update);
                }
            }
        }
        if by_counter.is_empty() {
            continue;
        }
        let zero = unsafe { LLVMConstInt(i64t, 0, 0) };
        let mut slots = Vec::new();
        for (address, updates) in by_counter {
            let slot = unsafe {
                LLVMPositionBuilderBefore(builder, LLVMGetFirstInstruction(entry));
                let slot = LLVMBuildAlloca(builder, i64t, c"pathprof.promoted".as_ptr());
                LLVMSetAlignment(slot, 8);
                let init = LLVMBuildStore(builder, zero, slot);
                LLVMSetAlignment(init, 8);
                slot
            };
            for u in updates {
                promoted += 1;
                match u {
                    Update::Plain { load, store } => unsafe {
                        LLVMSetOperand(load, 0, slot);
                        LLVMSetOperand(store, 1, slot);
                    },
                    Update::Atomic { rmw } => unsafe {
                        LLVMPositionBuilderBefore(builder, rmw);
                        let old = LLVMBuildLoad2(builder, i64t, slot, c"pathprof.count".as_ptr());
                        LLVMSetAlignment(old, 8);
                        let new = LLVMBuildAdd(builder, old, LLVMGetOperand(rmw, 1), c"pathprof.count.next".as_ptr());
                        LLVMSetAlignment(LLVMBuildStore(builder, new, slot), 8);
                        LLVMInstructionEraseFromParent(rmw);
                    },
                }
            }
            slots.push((address, slot));
        }
        for &e in &region.exits {
            let edge = cfg.edge(e);
            let from = graph.blocks[edge.from.index()];
            let at = match edge.kind {
                EdgeKind::Branch { succ } => {
                    let single_pred = adj
                        .in_edges(edge.to)
                        .iter()
                        .filter(|&&i| matches!(cfg.edge(i).kind, EdgeKind::Branch { .. }))
                        .count()
                        == 1;
                    let term = ir::terminator(from).expect("a block has a terminator");
                    if single_pred {
                        ir::first_insertion_point(graph.blocks[edge.to.index()])
                    } else if matches!(ir::opcode(term), LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch) {
                        let via = unsafe { shim::pathprof_shim_split_edge(term, succ) };
                        if via.is_null() {
                            ir::source_end_insertion_point(from)
                        } else {
                            ir::terminator(via)
                        }
                    } else {
                        // Flushing before the terminator is exact too; it just also runs when the loop goes on.
                        ir::source_end_insertion_point(from)
                    }
                }
                _ => ir::source_end_insertion_point(from),
            };
            let at = at.expect("an exit has an insertion point");
            for &(address, slot) in &slots {
                // `counters[P] += slot; slot = 0`.
                unsafe {
                    LLVMPositionBuilderBefore(builder, at);
                    let count = LLVMBuildLoad2(builder, i64t, slot, c"pathprof.promoted.count".as_ptr());
                    LLVMSetAlignment(count, 8);
                    counters.add_value_at(at, address, count);
                    LLVMPositionBuilderBefore(builder, at);
                    LLVMSetAlignment(LLVMBuildStore(builder, zero, slot), 8);
                }
            }
        }
    }
    unsafe { LLVMDisposeBuilder(builder) };
    promoted
}

/// Whether promotion may touch `f` at all: not in functions compiled without optimisation (nothing would turn
/// the slots into registers) nor in functions that call `setjmp` (a slot's value after a `longjmp` back into the
/// frame is not defined).
pub fn eligible(f: LLVMValueRef, graph: &FunctionGraph) -> bool {
    !ir::fn_has_attr(f, ir::attr_kind("optnone")) && graph.reentry_blocks.is_empty()
}

/// Per block of `graph`: whether it holds a call that may not return, or any other way to EXIT than a return —
/// a point where a slot's counts could be lost or the profile read, which no region may contain.
pub fn blocked_blocks(graph: &FunctionGraph) -> Vec<bool> {
    let cfg = &graph.cfg;
    let adj = cfg.adjacency();
    (0..cfg.num_blocks())
        .map(|b| {
            !graph.abnormal_calls[b].is_empty()
                || adj
                    .out_edges(pathprof_core::BlockId(b as u32))
                    .iter()
                    .any(|&e| cfg.edge(e).kind == EdgeKind::Termination)
        })
        .collect()
}

/// The counter address and shape of `inst` if it is an update the emitter wrote: the store of a plain update
/// (whose load of the same constant address feeds the add), or an `atomicrmw add`. Volatile updates are not
/// the emitter's in-loop ones and are left alone.
fn counter_update(inst: LLVMValueRef, counters: LLVMValueRef) -> Option<(LLVMValueRef, Update)> {
    unsafe {
        match ir::opcode(inst) {
            LLVMOpcode::LLVMStore => {
                let address = LLVMGetOperand(inst, 1);
                let value = LLVMGetOperand(inst, 0);
                if ir::is_volatile(inst) || !addresses(address, counters) || LLVMIsAInstruction(value).is_null() {
                    return None;
                }
                if ir::opcode(value) != LLVMOpcode::LLVMAdd {
                    return None;
                }
                let load = LLVMGetOperand(value, 0);
                let is_own_load = !LLVMIsAInstruction(load).is_null()
                    && ir::opcode(load) == LLVMOpcode::LLVMLoad
                    && LLVMGetOperand(load, 0) == address
                    && !ir::is_volatile(load)
                    && LLVMGetInstructionParent(load) == LLVMGetInstructionParent(inst);
                // The load's value must feed nothing but this add, and the add nothing but the store.
                let sole_use = |v: LLVMValueRef| {
                    let u = LLVMGetFirstUse(v);
                    !u.is_null() && LLVMGetNextUse(u).is_null()
                };
                (is_own_load && sole_use(load) && sole_use(value))
                    .then_some((address, Update::Plain { load, store: inst }))
            }
            LLVMOpcode::LLVMAtomicRMW => {
                let address = LLVMGetOperand(inst, 0);
                let is_add = LLVMGetAtomicRMWBinOp(inst) == LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpAdd;
                (is_add && addresses(address, counters) && LLVMGetFirstUse(inst).is_null())
                    .then_some((address, Update::Atomic { rmw: inst }))
            }
            _ => None,
        }
    }
}

/// `address` is `counters`, a constant GEP into it, or a GEP into it computed in the function's entry block
/// (which no loop contains, so the address is the same throughout every region: the interprocedural modes'
/// slots `pathNumOnEntry + c`, see [`crate::interproc_emit`]).
fn addresses(address: LLVMValueRef, counters: LLVMValueRef) -> bool {
    unsafe {
        if address == counters {
            return true;
        }
        if !LLVMIsAConstantExpr(address).is_null() {
            return LLVMGetConstOpcode(address) == LLVMOpcode::LLVMGetElementPtr
                && LLVMGetOperand(address, 0) == counters;
        }
        if LLVMIsAGetElementPtrInst(address).is_null() || LLVMGetOperand(address, 0) != counters {
            return false;
        }
        let block = LLVMGetInstructionParent(address);
        let f = LLVMGetBasicBlockParent(block);
        LLVMGetEntryBasicBlock(f) == block
    }
}
