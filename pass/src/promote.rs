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
//!
//! [`promote_after_inlining`] does it once more in the optimiser, after the inliner moved callees' updates into
//! their callers' loops, with what the IR says by then (and the same guarantee).

use crate::cfg_build::{self, CallFacts, FunctionGraph};
use crate::emit::Counters;
use crate::{ir, shim};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMAtomicRMWBinOp, LLVMOpcode, LLVMTypeKind};
use pathprof_core::promotion::promotion_regions;
use pathprof_core::EdgeKind;
use pathprof_format::symbols;
use std::collections::{HashMap, HashSet};

/// One counter update the emitter wrote inside a region.
struct Update {
    /// Which counter it adds to.
    address: Address,
    /// How the update is written.
    shape: Shape,
}

/// The shape of an update.
enum Shape {
    /// `%v = load P; %n = add %v, d; store %n, P`.
    Plain { load: LLVMValueRef, add: LLVMValueRef, store: LLVMValueRef },
    /// `atomicrmw add P, d` — replaced by a plain update of the (thread-private) slot.
    Atomic { rmw: LLVMValueRef },
}

/// Where an update adds: one counter, or one of several that `select`s choose between. SimplifyCFG merges the
/// updates of a callee's two counters into one update through a selected address (`if (c) return a; return
/// b;`) long before the callee is inlined into a loop; such an update becomes a register add per counter, each
/// of the delta or 0.
enum Address {
    Counter(LLVMValueRef),
    Select { condition: LLVMValueRef, then: Box<Address>, otherwise: Box<Address> },
}

impl Address {
    /// The counters it may add to, in order.
    fn counters(&self, out: &mut Vec<LLVMValueRef>) {
        match self {
            Address::Counter(a) => out.push(*a),
            Address::Select { then, otherwise, .. } => {
                then.counters(out);
                otherwise.counters(out);
            }
        }
    }
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
    let global = counters.global();
    let target = Target { is_counter: &|g| g == global, after_inlining: false, flush: Flush::Module(counters) };
    promote_regions(f, &graph, &target).0
}

/// Promotion after inlining: the inliner puts a callee's counter updates — `volatile` ones too, outside any
/// loop of the callee — into the caller's loops, where the promotion at instrumentation time never saw them
/// (the callee was instrumented on its own). LLVM's instrumentation inlines small functions before it
/// instruments, for the same reason; pathprof keeps instrumenting the front end's CFG and promotes once more
/// here, in the function simplification pipeline after the inliner (the shim's peephole callback, before the
/// loop passes, so that loops that only count still fold and vectorise).
///
/// The same regions as at instrumentation, with what the IR says now: a call may leave abnormally unless
/// LLVM's attributes (inferred by now for the module's functions) say it returns and does not unwind
/// ([`CallFacts::from_attributes`]); of pathprof's own runtime calls only the path-table updates say so. Any
/// function's updates of any module's counter array (`__pathprof_counters`, ThinLTO-renamed copies included)
/// are taken, at constant addresses only; slots become registers through LLVM's mem2reg. Returns the updates
/// promoted.
pub fn promote_after_inlining(f: LLVMValueRef) -> usize {
    // The shim calls this only for functions with a counter update in a loop.
    if ir::fn_has_attr(f, ir::attr_kind("optnone")) {
        return 0;
    }
    let facts = CallFacts::from_attributes();
    let Ok(graph) = cfg_build::build(f, &facts) else { return 0 };
    if !eligible(f, &graph) {
        return 0;
    }
    let target = Target { is_counter: &is_counter_array, after_inlining: true, flush: Flush::Direct };
    let (promoted, mut slots) = promote_regions(f, &graph, &target);
    if !slots.is_empty() {
        unsafe { shim::pathprof_shim_promote_to_registers(slots.as_mut_ptr(), slots.len()) };
    }
    promoted
}

/// A count an emitter keeps in a function-local slot from the start, in a unit whose counts go to a hash table:
/// a back edge's matches of a path its loop repeats, or a count at a constant path number. [`promote`]
/// retargets only updates of a counter array at a constant address; a table's count is a call keyed by the
/// path number, so the emitter counts `slot += delta` and [`flush_local_counts`] adds the slot to the path's
/// count where the loop is left — one table update per loop exit instead of one per iteration — or, outside
/// any loop it may keep counts in, puts the table update back where the count was.
pub struct LocalCount {
    /// The `alloca` (in the entry block, initialised to 0 there by `init`).
    pub slot: LLVMValueRef,
    /// The store of 0 that initialises it.
    pub init: LLVMValueRef,
    /// The path number it counts, defined in the entry block.
    pub key: LLVMValueRef,
}

/// The local counts one function's emitter creates, their slots at the top of the entry block (where SROA
/// looks for them, whatever the emitter splits later). Shared behind `&self` by emitters that count through
/// `&self`.
pub struct LocalCounts {
    builder: LLVMBuilderRef,
    entry: LLVMBasicBlockRef,
    counts: std::cell::RefCell<Vec<LocalCount>>,
}

impl LocalCounts {
    /// Slots go into `entry`, the function's entry block; code is built with `builder`.
    pub fn new(builder: LLVMBuilderRef, entry: LLVMBasicBlockRef) -> LocalCounts {
        LocalCounts { builder, entry, counts: Default::default() }
    }

    /// A new slot that counts path `key` (a constant, or a value the entry block defines: the count's updates
    /// and flushes all lie after its definition).
    pub fn slot(&self, key: LLVMValueRef) -> LLVMValueRef {
        unsafe {
            let i64t = LLVMTypeOf(key);
            LLVMPositionBuilderBefore(self.builder, LLVMGetFirstInstruction(self.entry));
            let slot = LLVMBuildAlloca(self.builder, i64t, c"pathprof.local".as_ptr());
            LLVMSetAlignment(slot, 8);
            let init = LLVMBuildStore(self.builder, LLVMConstInt(i64t, 0, 0), slot);
            LLVMSetAlignment(init, 8);
            self.counts.borrow_mut().push(LocalCount { slot, init, key });
            slot
        }
    }

    /// `count[key] += delta` before `before`, in a slot of its own.
    pub fn count(&self, before: LLVMValueRef, key: LLVMValueRef, delta: LLVMValueRef) {
        let slot = self.slot(key);
        unsafe {
            LLVMPositionBuilderBefore(self.builder, before);
            crate::emit::add_to_counter(self.builder, slot, delta, false, false);
        }
    }

    /// The counts created, for [`flush_local_counts`].
    pub fn into_counts(self) -> Vec<LocalCount> {
        self.counts.into_inner()
    }
}

/// Adds each of `f`'s local counts (already emitted) to its path's count on the exits of the promotion region
/// its updates lie in — `if (slot != 0) { count[key] += slot; slot = 0; }`, through `add(before, key, delta)`
/// — so that SROA keeps the count in a register while the loop runs. A count whose updates lie in no region of
/// the instrumented function (or beyond the flush budget) is counted where it is updated instead, through
/// `add` as well: exact either way. Returns how many counts were kept in registers.
pub fn flush_local_counts(
    f: LLVMValueRef,
    facts: &CallFacts,
    locals: &[LocalCount],
    add: &dyn Fn(LLVMValueRef, LLVMValueRef, LLVMValueRef),
) -> usize {
    if locals.is_empty() {
        return 0;
    }
    let graph = cfg_build::build(f, facts).ok();
    let mut region_of: Vec<Option<usize>> = vec![None; locals.len()];
    let mut points: Vec<(LLVMValueRef, usize)> = Vec::new();
    if let Some(graph) = &graph {
        let cfg = &graph.cfg;
        let adj = cfg.adjacency();
        let regions = promotion_regions(cfg, &blocked_blocks(graph));
        let block_index: HashMap<LLVMBasicBlockRef, usize> =
            graph.blocks.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let mut region_of_block = vec![None; graph.blocks.len()];
        for (r, region) in regions.iter().enumerate() {
            for b in &region.blocks {
                region_of_block[b.index()] = Some(r);
            }
        }
        for (i, local) in locals.iter().enumerate() {
            let mut regions_used = local_updates(local)
                .into_iter()
                .map(|u| block_index.get(&unsafe { LLVMGetInstructionParent(u) }).and_then(|&b| region_of_block[b]));
            let first = regions_used.next().flatten();
            if first.is_some() && regions_used.all(|r| r == first) {
                region_of[i] = first;
            }
        }
        // Every point first: a flush splits its block, and later exits read their source blocks' terminators.
        for (r, region) in regions.iter().enumerate() {
            let mine: Vec<usize> = (0..locals.len()).filter(|&i| region_of[i] == Some(r)).collect();
            let kept = MAX_FLUSHES_PER_REGION / region.exits.len().max(1);
            for &i in mine.iter().skip(kept) {
                region_of[i] = None;
            }
            if mine.is_empty() || kept == 0 {
                continue;
            }
            for &e in &region.exits {
                let at = exit_point(graph, &adj, e);
                points.extend(mine.iter().take(kept).map(|&i| (at, i)));
            }
        }
    }
    let ctx = unsafe { LLVMGetModuleContext(LLVMGetGlobalParent(f)) };
    let builder = unsafe { LLVMCreateBuilderInContext(ctx) };
    for (at, i) in points {
        let local = &locals[i];
        unsafe {
            LLVMPositionBuilderBefore(builder, at);
            let i64t = LLVMInt64TypeInContext(ctx);
            let count = LLVMBuildLoad2(builder, i64t, local.slot, c"pathprof.local.count".as_ptr());
            LLVMSetAlignment(count, 8);
            LLVMSetAlignment(LLVMBuildStore(builder, LLVMConstInt(i64t, 0, 0), local.slot), 8);
            let any = LLVMBuildICmp(
                builder,
                inkwell::llvm_sys::LLVMIntPredicate::LLVMIntNE,
                count,
                LLVMConstInt(i64t, 0, 0),
                c"pathprof.local.any".as_ptr(),
            );
            let then_term = shim::pathprof_shim_if_then(any, at);
            add(then_term, local.key, count);
        }
    }
    // The rest count where they are updated: `count[key] += delta` replaces `slot += delta`.
    let mut kept = 0;
    for (i, local) in locals.iter().enumerate() {
        if region_of[i].is_some() {
            kept += 1;
            continue;
        }
        for store in local_updates(local) {
            unsafe {
                let new = LLVMGetOperand(store, 0);
                let old = LLVMGetOperand(new, 0);
                let delta = LLVMGetOperand(new, 1);
                add(store, local.key, delta);
                LLVMInstructionEraseFromParent(store);
                LLVMInstructionEraseFromParent(new);
                LLVMInstructionEraseFromParent(old);
            }
        }
    }
    unsafe { LLVMDisposeBuilder(builder) };
    kept
}

/// The stores of `local`'s updates (`%old = load slot; %new = add %old, delta; store %new, slot`), which the
/// emitter wrote and nothing else touches; its initialising store and the flushes are not among them.
fn local_updates(local: &LocalCount) -> Vec<LLVMValueRef> {
    let mut stores = Vec::new();
    unsafe {
        let mut u = LLVMGetFirstUse(local.slot);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if ir::opcode(user) == LLVMOpcode::LLVMStore && user != local.init {
                let value = LLVMGetOperand(user, 0);
                if !LLVMIsAInstruction(value).is_null() && ir::opcode(value) == LLVMOpcode::LLVMAdd {
                    stores.push(user);
                }
            }
            u = LLVMGetNextUse(u);
        }
    }
    stores
}

/// What [`promote_regions`] promotes and how the counts go back.
struct Target<'a> {
    /// Whether a global is a counter array whose updates are promoted.
    is_counter: &'a dyn Fn(LLVMValueRef) -> bool,
    /// Whether `volatile` updates are taken too (after inlining: the volatile ones are a callee's updates outside
    /// its loops, volatile only to spare the optimiser work).
    after_inlining: bool,
    /// How the slots go back to the counters.
    flush: Flush<'a>,
}

/// How a region's slots are added to their counters on its exits.
enum Flush<'a> {
    /// As the module being instrumented updates its counters.
    Module(&'a Counters),
    /// Plainly, or atomically where the slot's updates were `atomicrmw` (after inlining: any module's counters).
    Direct,
}

/// Moves the counter updates `target` names inside `graph`'s promotion regions into slots (`alloca`s in the entry
/// block) and flushes the slots on every region exit. Returns the number of updates moved and the slots.
fn promote_regions(f: LLVMValueRef, graph: &FunctionGraph, target: &Target) -> (usize, Vec<LLVMValueRef>) {
    let cfg = &graph.cfg;
    let adj = cfg.adjacency();
    let blocked = blocked_blocks(graph);
    let ctx = unsafe { LLVMGetModuleContext(LLVMGetGlobalParent(f)) };
    let i64t = unsafe { LLVMInt64TypeInContext(ctx) };
    let builder = unsafe { LLVMCreateBuilderInContext(ctx) };
    let entry = ir::blocks(f)[0];
    let mut promoted = 0;
    let mut all_slots = Vec::new();
    for region in promotion_regions(cfg, &blocked) {
        // Counters in order of their first update in the region (not by address: pointer values differ from
        // one compile to the next, and the slots' order is the order of their flushes in the IR).
        let instructions: Vec<LLVMValueRef> =
            region.blocks.iter().flat_map(|&b| ir::instructions(graph.blocks[b.index()])).collect();
        let updates = sole_accessors(
            instructions.iter().filter_map(|&i| counter_update(i, target)).collect(),
            &instructions,
            target,
        );
        let updates = within_flush_budget(updates, region.exits.len());
        if updates.is_empty() {
            continue;
        }
        let mut counters = Vec::new();
        for u in &updates {
            u.address.counters(&mut counters);
        }
        let zero = unsafe { LLVMConstInt(i64t, 0, 0) };
        let mut slots: Vec<(LLVMValueRef, LLVMValueRef, bool)> = Vec::new();
        let mut slot_of: HashMap<LLVMValueRef, usize> = HashMap::new();
        for address in counters {
            if slot_of.contains_key(&address) {
                continue;
            }
            let slot = unsafe {
                LLVMPositionBuilderBefore(builder, LLVMGetFirstInstruction(entry));
                let slot = LLVMBuildAlloca(builder, i64t, c"pathprof.promoted".as_ptr());
                LLVMSetAlignment(slot, 8);
                let init = LLVMBuildStore(builder, zero, slot);
                LLVMSetAlignment(init, 8);
                slot
            };
            slot_of.insert(address, slots.len());
            slots.push((address, slot, false));
        }
        for u in updates {
            promoted += 1;
            match (&u.address, &u.shape) {
                // The emitter's own shape: retargeted in place.
                (&Address::Counter(address), &Shape::Plain { load, store, .. }) => unsafe {
                    let slot = slots[slot_of[&address]].1;
                    LLVMSetOperand(load, 0, slot);
                    LLVMSetOperand(store, 1, slot);
                    LLVMSetVolatile(load, 0);
                    LLVMSetVolatile(store, 0);
                },
                (address, shape) => unsafe {
                    let (at, delta, dead, atomic) = match *shape {
                        Shape::Plain { load, add, store } => {
                            let delta = LLVMGetOperand(add, if LLVMGetOperand(add, 0) == load { 1 } else { 0 });
                            (store, delta, vec![store, add, load], false)
                        }
                        Shape::Atomic { rmw } => (rmw, LLVMGetOperand(rmw, 1), vec![rmw], true),
                    };
                    LLVMPositionBuilderBefore(builder, at);
                    let mut adds = Vec::new();
                    spread(builder, address, delta, &mut adds);
                    for (a, d) in adds {
                        let (_, slot, slot_atomic) = &mut slots[slot_of[&a]];
                        *slot_atomic |= atomic;
                        let slot = *slot;
                        let old = LLVMBuildLoad2(builder, i64t, slot, c"pathprof.count".as_ptr());
                        LLVMSetAlignment(old, 8);
                        let new = LLVMBuildAdd(builder, old, d, c"pathprof.count.next".as_ptr());
                        LLVMSetAlignment(LLVMBuildStore(builder, new, slot), 8);
                    }
                    for i in dead {
                        LLVMInstructionEraseFromParent(i);
                    }
                },
            }
        }
        for &e in &region.exits {
            let at = exit_point(graph, &adj, e);
            for &(address, slot, atomic) in &slots {
                // `counters[P] += slot; slot = 0`.
                unsafe {
                    LLVMPositionBuilderBefore(builder, at);
                    let count = LLVMBuildLoad2(builder, i64t, slot, c"pathprof.promoted.count".as_ptr());
                    LLVMSetAlignment(count, 8);
                    match target.flush {
                        Flush::Module(counters) => counters.add_value_at(at, address, count),
                        Flush::Direct => crate::emit::add_to_counter(builder, address, count, atomic, false),
                    }
                    LLVMPositionBuilderBefore(builder, at);
                    LLVMSetAlignment(LLVMBuildStore(builder, zero, slot), 8);
                }
            }
        }
        // Every slot is 0 outside its region (0 at the function's entry, and again after every flush); saying so
        // again at the end of each block that enters the region changes nothing at run time, but ends the slot's
        // live range there: without it SSA construction carries each slot's value through every join between
        // the region's exits and its entries — in a dispatch function inside a larger loop that a call blocks
        // (pcre2's `match()`: 136 regions, 883 slots), hundreds of PHIs per join, and the optimiser took 8× the
        // plain build's time over them.
        let mut entering: Vec<LLVMBasicBlockRef> = region
            .blocks
            .iter()
            .flat_map(|&v| adj.in_edges(v).iter().map(|&e| cfg.edge(e).from))
            .filter(|from| region.blocks.binary_search(from).is_err())
            .filter_map(|from| graph.blocks.get(from.index()).copied())
            .collect();
        entering.sort();
        entering.dedup();
        for from in entering {
            let Some(at) = ir::terminator(from) else { continue };
            for &(_, slot, _) in &slots {
                unsafe {
                    LLVMPositionBuilderBefore(builder, at);
                    LLVMSetAlignment(LLVMBuildStore(builder, zero, slot), 8);
                }
            }
        }
        all_slots.extend(slots.iter().map(|&(_, slot, _)| slot));
    }
    unsafe { LLVMDisposeBuilder(builder) };
    (promoted, all_slots)
}

/// Where a region's counts go back on exit edge `e`: the start of its target when the region is the target's
/// only way in, else a block split into the edge (or, where the edge cannot be split, the end of its source,
/// which is exact too: the flush then also runs when the loop goes on).
fn exit_point(graph: &FunctionGraph, adj: &pathprof_core::graph::Adjacency, e: pathprof_core::EdgeId) -> LLVMValueRef {
    let cfg = &graph.cfg;
    let edge = cfg.edge(e);
    let from = graph.blocks[edge.from.index()];
    let at = match edge.kind {
        EdgeKind::Branch { succ } => {
            let single_pred =
                adj.in_edges(edge.to).iter().filter(|&&i| matches!(cfg.edge(i).kind, EdgeKind::Branch { .. })).count()
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
    at.expect("an exit has an insertion point")
}

/// Most slot flushes one region may get (its exits × its promoted counters). Every exit flushes every slot, so a
/// loop with many exits and many counters — a re2c scanner's DFA, each state a way out — grew by their product:
/// cmark's `_scan_autolink_email` took 161 s to compile in edge mode (0.8 s unpromoted), a 15-state DFA 26,356
/// IR instructions for a 439-instruction function. LLVM's own promoter caps promotions per loop and exiting
/// blocks for the same reason.
const MAX_FLUSHES_PER_REGION: usize = 1024;

/// The updates of a region with `exits` exits that stay within [`MAX_FLUSHES_PER_REGION`]: those of the first
/// counters in order of first update; an update that may add to a counter beyond them (through a `select`ed
/// address) stays in memory, and so do the other updates of its counters, so that a promoted counter is still
/// updated nowhere else in the region ([`sole_accessors`]). What stays in memory is exact as before.
fn within_flush_budget(updates: Vec<Update>, exits: usize) -> Vec<Update> {
    let max_counters = MAX_FLUSHES_PER_REGION / exits.max(1);
    let counters_of = |u: &Update| {
        let mut c = Vec::new();
        u.address.counters(&mut c);
        c
    };
    let mut kept: Vec<LLVMValueRef> = Vec::new();
    for u in &updates {
        for c in counters_of(u) {
            if !kept.contains(&c) && kept.len() < max_counters {
                kept.push(c);
            }
        }
    }
    loop {
        let spill: Vec<LLVMValueRef> = updates
            .iter()
            .map(counters_of)
            .filter(|cs| cs.iter().any(|c| !kept.contains(c)))
            .flatten()
            .filter(|c| kept.contains(c))
            .collect();
        if spill.is_empty() {
            break;
        }
        kept.retain(|c| !spill.contains(c));
    }
    updates.into_iter().filter(|u| counters_of(u).iter().all(|c| kept.contains(c))).collect()
}

/// Whether `g` is a module's counter array, under any name ThinLTO gives it (`__pathprof_counters.llvm.N`).
fn is_counter_array(g: LLVMValueRef) -> bool {
    let is_global = unsafe { !LLVMIsAGlobalVariable(g).is_null() };
    is_global && ir::name(g).starts_with(symbols::COUNTERS)
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

/// The updates of counters that nothing else in the region touches. After the optimiser has run, a counter's
/// value may also be read elsewhere: GVN forwards an update's stored value to a later load of the counter (the
/// flush of an earlier promotion, say), and that reader then takes the counter as it was at that update. Moving
/// the counter's other updates into a slot would make that value stale and the reader's store would drop their
/// counts. So a counter is promoted only when every access to it in the region (through any address that may
/// be it) belongs to an update whose values feed nothing else.
fn sole_accessors(updates: Vec<Update>, region: &[LLVMValueRef], target: &Target) -> Vec<Update> {
    let mut own: HashSet<LLVMValueRef> = HashSet::new();
    for u in &updates {
        match u.shape {
            Shape::Plain { load, store, .. } => own.extend([load, store]),
            Shape::Atomic { rmw } => {
                own.insert(rmw);
            }
        }
    }
    let mut touched_otherwise: Vec<LLVMValueRef> = Vec::new();
    for &inst in region {
        let pointer = unsafe {
            match ir::opcode(inst) {
                LLVMOpcode::LLVMLoad => LLVMGetOperand(inst, 0),
                LLVMOpcode::LLVMStore => LLVMGetOperand(inst, 1),
                LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg => LLVMGetOperand(inst, 0),
                _ => continue,
            }
        };
        if own.contains(&inst) || self_contained(inst) {
            continue;
        }
        match address_of(pointer, target, 0) {
            Some(address) => address.counters(&mut touched_otherwise),
            // An access at a run-time address that is not a self-contained update may read any counter.
            None if based_on_counters(pointer, target) => return Vec::new(),
            None => {}
        }
    }
    updates
        .into_iter()
        .filter(|u| {
            let mut counters = Vec::new();
            u.address.counters(&mut counters);
            counters.iter().all(|c| !touched_otherwise.contains(c))
        })
        .collect()
}

/// Whether `inst` is part of an update whose values feed nothing else: the load or store of `load; add; store`
/// at one address in one block, or an `atomicrmw` whose result is unused. Path mode's `count[r]++` at a
/// run-time address is such an update wherever the emitter wrote it.
fn self_contained(inst: LLVMValueRef) -> bool {
    unsafe {
        match ir::opcode(inst) {
            LLVMOpcode::LLVMAtomicRMW => LLVMGetFirstUse(inst).is_null(),
            LLVMOpcode::LLVMStore => plain_update_load(inst).is_some(),
            LLVMOpcode::LLVMLoad => {
                let u = LLVMGetFirstUse(inst);
                if u.is_null() || !LLVMGetNextUse(u).is_null() {
                    return false;
                }
                let add = LLVMGetUser(u);
                let v = LLVMGetFirstUse(add);
                if ir::opcode(add) != LLVMOpcode::LLVMAdd || v.is_null() || !LLVMGetNextUse(v).is_null() {
                    return false;
                }
                let store = LLVMGetUser(v);
                !LLVMIsAStoreInst(store).is_null() && plain_update_load(store) == Some(inst)
            }
            _ => false,
        }
    }
}

/// The load of the plain update `store` completes (`%v = load P; %n = add %v, d; store %n, P`, one block, the
/// load feeding only the add and the add only the store), whatever `P` is.
fn plain_update_load(store: LLVMValueRef) -> Option<LLVMValueRef> {
    unsafe {
        let pointer = LLVMGetOperand(store, 1);
        let value = LLVMGetOperand(store, 0);
        if LLVMIsAInstruction(value).is_null() || ir::opcode(value) != LLVMOpcode::LLVMAdd {
            return None;
        }
        let is_own_load = |load: LLVMValueRef| {
            !LLVMIsAInstruction(load).is_null()
                && ir::opcode(load) == LLVMOpcode::LLVMLoad
                && LLVMGetOperand(load, 0) == pointer
                && LLVMGetInstructionParent(load) == LLVMGetInstructionParent(store)
        };
        let sole_use = |v: LLVMValueRef| {
            let u = LLVMGetFirstUse(v);
            !u.is_null() && LLVMGetNextUse(u).is_null()
        };
        let load = [0, 1].map(|i| LLVMGetOperand(value, i)).into_iter().find(|&l| is_own_load(l))?;
        (sole_use(load) && sole_use(value)).then_some(load)
    }
}

/// Whether `pointer` is computed from a counter array (a GEP chain at any index).
fn based_on_counters(pointer: LLVMValueRef, target: &Target) -> bool {
    let mut p = pointer;
    for _ in 0..8 {
        unsafe {
            if !LLVMIsAGlobalVariable(p).is_null() {
                return (target.is_counter)(p);
            }
            let is_gep = !LLVMIsAGetElementPtrInst(p).is_null()
                || (!LLVMIsAConstantExpr(p).is_null() && LLVMGetConstOpcode(p) == LLVMOpcode::LLVMGetElementPtr);
            if !is_gep {
                return false;
            }
            p = LLVMGetOperand(p, 0);
        }
    }
    false
}

/// The per-counter deltas of an update of `delta` at `address`, built at the builder's position: a `select`
/// hands the delta to the counter it chose and 0 to the other.
unsafe fn spread(
    builder: LLVMBuilderRef,
    address: &Address,
    delta: LLVMValueRef,
    out: &mut Vec<(LLVMValueRef, LLVMValueRef)>,
) {
    match address {
        Address::Counter(a) => out.push((*a, delta)),
        Address::Select { condition, then, otherwise } => {
            let zero = LLVMConstNull(LLVMTypeOf(delta));
            let (t, o) = (
                LLVMBuildSelect(builder, *condition, delta, zero, c"pathprof.delta".as_ptr()),
                LLVMBuildSelect(builder, *condition, zero, delta, c"pathprof.delta".as_ptr()),
            );
            spread(builder, then, t, out);
            spread(builder, otherwise, o, out);
        }
    }
}

/// The update `inst` is if the emitter wrote it: the store of a plain update (whose load of the same address
/// feeds the add), or an `atomicrmw add`. Volatile updates are the emitter's updates outside loops, taken only
/// when `target` says so.
fn counter_update(inst: LLVMValueRef, target: &Target) -> Option<Update> {
    unsafe {
        match ir::opcode(inst) {
            LLVMOpcode::LLVMStore => {
                let volatile_ok = |i: LLVMValueRef| target.after_inlining || !ir::is_volatile(i);
                let load = plain_update_load(inst)?;
                if !volatile_ok(inst) || !volatile_ok(load) || !is_i64(load) {
                    return None;
                }
                let address = address_of(LLVMGetOperand(inst, 1), target, 0)?;
                Some(Update { address, shape: Shape::Plain { load, add: LLVMGetOperand(inst, 0), store: inst } })
            }
            LLVMOpcode::LLVMAtomicRMW => {
                let is_add = LLVMGetAtomicRMWBinOp(inst) == LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpAdd;
                if !is_add || !LLVMGetFirstUse(inst).is_null() || !is_i64(inst) {
                    return None;
                }
                let address = address_of(LLVMGetOperand(inst, 0), target, 0)?;
                Some(Update { address, shape: Shape::Atomic { rmw: inst } })
            }
            _ => None,
        }
    }
}

/// Whether `v` is an `i64`: one counter. The SLP vectoriser turns the flushes of neighbouring counters into one
/// `<2 x i64>` update, which promotion after inlining meets at the later peephole points (whole-program builds);
/// such an update is left in memory.
fn is_i64(v: LLVMValueRef) -> bool {
    unsafe {
        let t = LLVMTypeOf(v);
        LLVMGetTypeKind(t) == LLVMTypeKind::LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 64
    }
}

/// `pointer` as an [`Address`]: a counter, or `select`s between counters (at most three deep) — only where
/// `target` takes a callee's updates (after inlining); the emitter itself never selects addresses.
fn address_of(pointer: LLVMValueRef, target: &Target, depth: u32) -> Option<Address> {
    if addresses(pointer, target) {
        return Some(Address::Counter(pointer));
    }
    let is_select = unsafe { !LLVMIsASelectInst(pointer).is_null() };
    if !target.after_inlining || !is_select || depth >= 3 {
        return None;
    }
    let operand = |i| unsafe { LLVMGetOperand(pointer, i) };
    Some(Address::Select {
        condition: operand(0),
        then: Box::new(address_of(operand(1), target, depth + 1)?),
        otherwise: Box::new(address_of(operand(2), target, depth + 1)?),
    })
}

/// `address` is a counter array of `target`, a constant GEP into one, or a GEP into one computed in the
/// function's entry block (which no loop contains, so the address is the same throughout every region: the
/// interprocedural modes' slots `pathNumOnEntry + c`, see [`crate::interproc_emit`]).
fn addresses(address: LLVMValueRef, target: &Target) -> bool {
    unsafe {
        if !LLVMIsAGlobalVariable(address).is_null() {
            return (target.is_counter)(address);
        }
        if !LLVMIsAConstantExpr(address).is_null() {
            return LLVMGetConstOpcode(address) == LLVMOpcode::LLVMGetElementPtr
                && (target.is_counter)(LLVMGetOperand(address, 0));
        }
        if LLVMIsAGetElementPtrInst(address).is_null() || !(target.is_counter)(LLVMGetOperand(address, 0)) {
            return false;
        }
        let block = LLVMGetInstructionParent(address);
        let f = LLVMGetBasicBlockParent(block);
        LLVMGetEntryBasicBlock(f) == block
    }
}
