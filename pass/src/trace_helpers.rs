//! The module-level helpers of trace mode's instrumentation (`crate::trace_mode`): the functions every traced
//! function's entry, call sites, decisions and landing pads call, which carry the writer's side of the trace
//! protocol (`pathprof_format::trace_layout`, `pathprof_core::tracing::regenerate`'s model).
//!
//! The `alwaysinline` ones hold each site's common path only — a call site's state check and Done, an entry's
//! state check, announced `1` or nothing, and shadow-stack slot, a decision's bits. Every rarer path is one
//! internal `noinline` function per module: the abandon, unwind and resync markers, an entry with a function id
//! (`enter_slow`) and a full word's spill (`put_full`, which hands the new bits back for the caller to store, so
//! loops keep them in registers). Inlined at every site, those paths multiplied a C++ file's code and compile
//! time (README, "Tracing").

use crate::globals::function_once;
use crate::ir;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMIntPredicate, LLVMLinkage};
use pathprof_format::symbols;
use pathprof_format::trace_layout::{
    ABANDON_ID, CALLEE_CERTAIN, ENTRY_CACHE_BITS, ENTRY_CACHE_SLOTS, FUNC_ID_BITS, RESYNC_ID, SHADOW_ENTRIES,
    STATE_CERTAIN, TLS_ACC, TLS_CACHE, TLS_CALLEE, TLS_SHADOW, TLS_STATE, UNWIND_ID,
};
use std::ffi::CString;
use std::ptr;

/// The helpers the emitter calls.
pub(crate) struct Helpers {
    /// put(u, w): appends `w` bits to the thread's bits, given in stream order (the first bit highest:
    /// `pathprof_format::trace_layout::stream_order` of the value written least-significant bit first).
    pub put: LLVMValueRef,
    pub put_ty: LLVMTypeRef,
    /// enter(index, binds) -> saved state: a traced function's entry.
    pub enter: LLVMValueRef,
    /// done(expect, d): a call site's return (Done).
    pub done: LLVMValueRef,
    /// done_direct(expect, d): a direct call site's return (no Done after its announced callee's return).
    pub done_direct: LLVMValueRef,
    /// done_certain(expect, d): a certain call site's return (no marker).
    pub done_certain: LLVMValueRef,
    /// resync(expect, d, id, block, call): a `setjmp` call's return.
    pub resync: LLVMValueRef,
    /// unwind(d, id): a landing pad's start.
    pub unwind: LLVMValueRef,
    /// put_loop(stay, exit, count): a deferred loop's bits at its exit: `count` × the bit `stay`, then the
    /// bit `exit` (`pathprof_core::tracing::deferred`).
    pub put_loop: LLVMValueRef,
}

/// Defines the helpers in `m`, building with `b`, for the thread state `tls` and the module descriptor `desc`
/// (of type `desc_ty`); `naive`: the second method's helpers (no decisions, no markers).
pub(crate) unsafe fn build(
    m: LLVMModuleRef,
    b: LLVMBuilderRef,
    tls: LLVMValueRef,
    desc: LLVMValueRef,
    desc_ty: LLVMTypeRef,
    naive: bool,
) -> Helpers {
    let ctx = LLVMGetModuleContext(m);
    let i32t = LLVMInt32TypeInContext(ctx);
    let i64t = LLVMInt64TypeInContext(ctx);
    let ptrt = LLVMPointerTypeInContext(ctx, 0);
    let voidt = LLVMVoidTypeInContext(ctx);
    let gep = |b: LLVMBuilderRef, word: usize| {
        let mut ix = [LLVMConstInt(i64t, word as u64, 0)];
        LLVMBuildInBoundsGEP2(b, i64t, tls, ix.as_mut_ptr(), 1, c"".as_ptr())
    };
    let c = |v: u64| LLVMConstInt(i64t, v, 0);
    let ordered = |b: LLVMBuilderRef, v: LLVMValueRef, w: LLVMValueRef| in_stream_order(m, b, v, w);
    // cached(id) -> the id's payload after an activation's prefix, through the thread's entry cache
    // (format::trace_layout, TLS_CACHE): `1` + the slot when the slot holds the id, else `0` + the id (bit 0
    // tells which); the slot then holds the id. No cache (0): always the id.
    let mut params = [i64t];
    let cached = helper(m, symbols::TRACE_CACHED, LLVMFunctionType(i64t, params.as_mut_ptr(), 1, 0));
    {
        let id = LLVMGetParam(cached, 0);
        let entry = LLVMAppendBasicBlockInContext(ctx, cached, c"entry".as_ptr());
        let look = LLVMAppendBasicBlockInContext(ctx, cached, c"look".as_ptr());
        let hit = LLVMAppendBasicBlockInContext(ctx, cached, c"hit".as_ptr());
        let miss = LLVMAppendBasicBlockInContext(ctx, cached, c"miss".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let p = LLVMBuildLoad2(b, i64t, gep(b, TLS_CACHE), c"".as_ptr());
        let none = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, p, c(0), c"".as_ptr());
        LLVMBuildCondBr(b, none, miss, look);
        LLVMPositionBuilderAtEnd(b, look);
        let slot = LLVMBuildAnd(b, id, c(ENTRY_CACHE_SLOTS as u64 - 1), c"".as_ptr());
        let base = LLVMBuildIntToPtr(b, p, ptrt, c"".as_ptr());
        let mut ix = [slot];
        let sp = LLVMBuildInBoundsGEP2(b, i32t, base, ix.as_mut_ptr(), 1, c"".as_ptr());
        let old = LLVMBuildZExt(b, LLVMBuildLoad2(b, i32t, sp, c"".as_ptr()), i64t, c"".as_ptr());
        LLVMBuildStore(b, LLVMBuildTrunc(b, id, i32t, c"".as_ptr()), sp);
        let same = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, old, id, c"".as_ptr());
        LLVMBuildCondBr(b, same, hit, miss);
        LLVMPositionBuilderAtEnd(b, hit);
        LLVMBuildRet(b, LLVMBuildOr(b, LLVMBuildShl(b, slot, c(1), c"".as_ptr()), c(1), c"".as_ptr()));
        LLVMPositionBuilderAtEnd(b, miss);
        LLVMBuildRet(b, LLVMBuildShl(b, id, c(1), c"".as_ptr()));
    }
    // An activation marker for `id`: `01` + its payload at a fresh direct call site (`other`), `1` + its
    // payload elsewhere; (value in stream order, width).
    let marker = |b: LLVMBuilderRef, other: LLVMValueRef, id: LLVMValueRef| {
        let payload = LLVMBuildCall2(b, LLVMGlobalGetValueType(cached), cached, [id].as_mut_ptr(), 1, c"".as_ptr());
        let hit = LLVMBuildTrunc(b, payload, LLVMInt1TypeInContext(ctx), c"".as_ptr());
        let pw =
            LLVMBuildSelect(b, hit, c(1 + u64::from(ENTRY_CACHE_BITS)), c(1 + u64::from(FUNC_ID_BITS)), c"".as_ptr());
        let plain = LLVMBuildOr(b, LLVMBuildShl(b, payload, c(1), c"".as_ptr()), c(1), c"".as_ptr());
        let escaped = LLVMBuildOr(b, LLVMBuildShl(b, payload, c(2), c"".as_ptr()), c(0b10), c"".as_ptr());
        let v = LLVMBuildSelect(b, other, escaped, plain, c"".as_ptr());
        let w = LLVMBuildAdd(b, pw, LLVMBuildSelect(b, other, c(2), c(1), c"".as_ptr()), c"".as_ptr());
        (ordered(b, v, w), w)
    };
    // Reads and clears the announced callee: whether the stream is at a fresh direct call site.
    let fresh_site = |b: LLVMBuilderRef| {
        let pcallee = gep(b, TLS_CALLEE);
        let announced = LLVMBuildLoad2(b, i64t, pcallee, c"".as_ptr());
        LLVMBuildStore(b, c(0), pcallee);
        LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, announced, c(0), c"".as_ptr())
    };
    // The width of a Done here (`00` at a fresh direct call site, else `0`); clears the announced callee.
    let done_width = |b: LLVMBuilderRef| LLVMBuildSelect(b, fresh_site(b), c(2), c(1), c"".as_ptr());
    // A resync or unwind marker's reserved id, prefixed as the position calls for; clears the callee.
    let marker_here = |b: LLVMBuilderRef, reserved: u64| marker(b, fresh_site(b), c(reserved));

    // put(u, w): appends the `w` bits of `u`, in stream order (the first bit highest: `trace_layout::stream_order`),
    // to the accumulator (TLS_ACC: the pending bits under a marker bit): `acc << w | u` while the marker stays in
    // the word, one shift, one or and one store. A full word goes to the runtime through
    // `put_full(acc, u, w)`: out of line (once every 64 bits, and its code at every decision and call site
    // doubled theirs), it takes the accumulator `put` loaded and returns the new one for `put` to store, so that
    // a loop keeps it in a register from one iteration to the next.
    let mut params = [i64t, i64t];
    let put_ty = LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0);
    let put = helper(m, symbols::TRACE_PUT, put_ty);
    let mut full_params = [i64t, i64t, i64t];
    let put_full = cold_helper(m, symbols::TRACE_PUT_FULL, LLVMFunctionType(i64t, full_params.as_mut_ptr(), 3, 0));
    let mut sp = [ptrt, i64t, i64t];
    let spill = runtime(m, symbols::TRACE_SPILL, LLVMFunctionType(voidt, sp.as_mut_ptr(), 3, 0));
    let ctlz_ty = LLVMFunctionType(i64t, [i64t, LLVMInt1TypeInContext(ctx)].as_mut_ptr(), 2, 0);
    let ctlz = intrinsic(m, "llvm.ctlz.i64", ctlz_ty);
    {
        let arg = |i| LLVMGetParam(put_full, i);
        let (acc, u, w) = (arg(0), arg(1), arg(2));
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, put_full, c"entry".as_ptr()));
        // Called with k + w ≥ 64 for the k = 63 − ctlz(acc) pending bits, which with w ≤ 32 means k ≥ 32: the
        // word takes `take` = 64 − k (1..=32) of the new bits, the rest (w − take, 0..=31) stay pending.
        let mut ctlz_args = [acc, LLVMConstInt(LLVMInt1TypeInContext(ctx), 1, 0)];
        let lz = LLVMBuildCall2(b, ctlz_ty, ctlz, ctlz_args.as_mut_ptr(), 2, c"".as_ptr());
        let take = LLVMBuildAdd(b, lz, c(1), c"".as_ptr());
        let rest = LLVMBuildSub(b, w, take, c"".as_ptr());
        let word = LLVMBuildOr(
            b,
            LLVMBuildShl(b, acc, take, c"".as_ptr()),
            LLVMBuildLShr(b, u, rest, c"".as_ptr()),
            c"".as_ptr(),
        );
        let marker = LLVMBuildShl(b, c(1), rest, c"".as_ptr());
        let low = LLVMBuildAnd(b, u, LLVMBuildSub(b, marker, c(1), c"".as_ptr()), c"".as_ptr());
        let nacc = LLVMBuildOr(b, marker, low, c"".as_ptr());
        // The runtime stores the new accumulator too, before it returns: a signal handler that interrupts the
        // spill finds the thread's position consistent (`rt::trace`, `__pathprof_trace_spill_word`).
        let mut args = [tls, word, nacc];
        LLVMBuildCall2(b, LLVMGlobalGetValueType(spill), spill, args.as_mut_ptr(), 3, c"".as_ptr());
        LLVMBuildRet(b, nacc);
    }
    {
        let (u, w) = (LLVMGetParam(put, 0), LLVMGetParam(put, 1));
        let entry = LLVMAppendBasicBlockInContext(ctx, put, c"entry".as_ptr());
        let fast = LLVMAppendBasicBlockInContext(ctx, put, c"fast".as_ptr());
        let slow = LLVMAppendBasicBlockInContext(ctx, put, c"full".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let pacc = gep(b, TLS_ACC);
        let acc = LLVMBuildLoad2(b, i64t, pacc, c"".as_ptr());
        // The marker stays in the word: acc < 2^(64 − w), i.e. acc >> (63 − w) < 2 (w ≤ 32: a defined shift; a
        // constant at every site, where it folds to one compare).
        let top = LLVMBuildLShr(b, acc, LLVMBuildSub(b, c(63), w, c"".as_ptr()), c"".as_ptr());
        let fits = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntULT, top, c(2), c"".as_ptr());
        LLVMBuildCondBr(b, fits, fast, slow);
        LLVMPositionBuilderAtEnd(b, fast);
        LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildShl(b, acc, w, c"".as_ptr()), u, c"".as_ptr()), pacc);
        LLVMBuildRetVoid(b);
        LLVMPositionBuilderAtEnd(b, slow);
        let mut args = [acc, u, w];
        let r = LLVMBuildCall2(b, LLVMGlobalGetValueType(put_full), put_full, args.as_mut_ptr(), 3, c"".as_ptr());
        LLVMBuildStore(b, r, pacc);
        LLVMBuildRetVoid(b);
    }
    let mut fp = [ptrt];
    let abnormal = runtime(m, symbols::TRACE_ABNORMAL, LLVMFunctionType(voidt, fp.as_mut_ptr(), 1, 0));
    // enter_slow(s, announced, id, binds) -> saved state: an entry's marker where it is not a fresh direct
    // call site's announced `1` or a certain site's nothing (`enter` inlines those two): `01` + id if the site
    // announced another function, `1` + id elsewhere (format::trace_layout, TLS_CALLEE), through the entry
    // cache — only here, since the reader's copy of the cache sees only the entries written with an id. A
    // certain call site's state (STATE_CERTAIN) admits no other entry than its announced one: anything else
    // there is a signal handler's, an abnormal transfer. Out of line but not cold: entries from other modules
    // and indirect calls take it; inlined, it made an instrumented one-line function too big for the
    // inliner.
    let mut params = [i64t, i64t, i64t, i64t];
    let enter_slow = outlined(m, symbols::TRACE_ENTER_SLOW, LLVMFunctionType(i64t, params.as_mut_ptr(), 4, 0));
    {
        let arg = |i| LLVMGetParam(enter_slow, i);
        let (phi, announced, id, binds) = (arg(0), arg(1), arg(2), arg(3));
        let entry = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"entry".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let mine = LLVMBuildAdd(b, id, c(1), c"".as_ptr());
        let certain = LLVMBuildICmp(
            b,
            LLVMIntPredicate::LLVMIntEQ,
            announced,
            LLVMBuildOr(b, mine, c(CALLEE_CERTAIN), c"".as_ptr()),
            c"".as_ptr(),
        );
        let at_certain = LLVMBuildICmp(
            b,
            LLVMIntPredicate::LLVMIntNE,
            LLVMBuildAnd(b, phi, c(STATE_CERTAIN), c"".as_ptr()),
            c(0),
            c"".as_ptr(),
        );
        let mismatch = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, certain, at_certain, c"".as_ptr());
        let bad = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"uncertain".as_ptr());
        let check = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"marker?".as_ptr());
        let write = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"marker".as_ptr());
        let quiet = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"certain".as_ptr());
        let full = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"full".as_ptr());
        LLVMBuildCondBr(b, mismatch, bad, check);
        LLVMPositionBuilderAtEnd(b, bad);
        LLVMBuildCall2(b, LLVMGlobalGetValueType(abnormal), abnormal, [tls].as_mut_ptr(), 1, c"".as_ptr());
        LLVMBuildBr(b, check);
        LLVMPositionBuilderAtEnd(b, check);
        LLVMBuildCondBr(b, certain, quiet, write);
        // A certain announcement: no marker.
        LLVMPositionBuilderAtEnd(b, quiet);
        LLVMBuildRet(b, phi);
        // The announced callee: `1`. Anything else: its marker.
        LLVMPositionBuilderAtEnd(b, write);
        let is_mine = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, announced, mine, c"".as_ptr());
        let bit = LLVMAppendBasicBlockInContext(ctx, enter_slow, c"bit".as_ptr());
        LLVMBuildCondBr(b, is_mine, bit, full);
        LLVMPositionBuilderAtEnd(b, bit);
        LLVMBuildCall2(b, put_ty, put, [c(1), c(1)].as_mut_ptr(), 2, c"".as_ptr());
        LLVMBuildRet(b, LLVMBuildOr(b, phi, binds, c"".as_ptr()));
        LLVMPositionBuilderAtEnd(b, full);
        let other = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, announced, c(0), c"".as_ptr());
        let (v, w) = marker(b, other, id);
        LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
        LLVMBuildRet(b, phi);
    }

    // enter(id, binds) -> saved state: an even state means a new thread or an abnormal entry (runtime
    // decides). `binds` (STATE_CERTAIN for a function without landing pads, else 0) goes into the saved
    // state of an announced entry: the state the function restores on return says the site is done.
    let mut params = [i64t, i64t];
    let enter = helper(m, symbols::TRACE_ENTER, LLVMFunctionType(i64t, params.as_mut_ptr(), 2, 0));
    let first = runtime(m, symbols::TRACE_FIRST, LLVMFunctionType(i64t, fp.as_mut_ptr(), 1, 0));
    {
        let (local, binds) = (LLVMGetParam(enter, 0), LLVMGetParam(enter, 1));
        let entry = LLVMAppendBasicBlockInContext(ctx, enter, c"entry".as_ptr());
        let slow = LLVMAppendBasicBlockInContext(ctx, enter, c"even".as_ptr());
        let go = LLVMAppendBasicBlockInContext(ctx, enter, c"go".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let pstate = gep(b, TLS_STATE);
        let s = LLVMBuildLoad2(b, i64t, pstate, c"".as_ptr());
        let odd = LLVMBuildAnd(b, s, c(1), c"".as_ptr());
        let is_odd = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, odd, c(0), c"".as_ptr());
        LLVMBuildCondBr(b, is_odd, go, slow);
        LLVMPositionBuilderAtEnd(b, slow);
        let mut args = [tls];
        let s2 = LLVMBuildCall2(b, LLVMGlobalGetValueType(first), first, args.as_mut_ptr(), 1, c"".as_ptr());
        LLVMBuildBr(b, go);
        LLVMPositionBuilderAtEnd(b, go);
        let phi = LLVMBuildPhi(b, i64t, c"".as_ptr());
        let mut vals = [s, s2];
        let mut blocks = [entry, slow];
        LLVMAddIncoming(phi, vals.as_mut_ptr(), blocks.as_mut_ptr(), 2);
        let d = LLVMBuildAdd(b, LLVMBuildAnd(b, phi, c(0xffff_ffff), c"".as_ptr()), c(1), c"".as_ptr());
        LLVMBuildStore(b, d, pstate);
        let pbase = LLVMBuildStructGEP2(b, desc_ty, desc, 4, c"".as_ptr());
        let base = LLVMBuildZExt(b, LLVMBuildLoad2(b, i32t, pbase, c"".as_ptr()), i64t, c"".as_ptr());
        let id = LLVMBuildAdd(b, base, local, c"".as_ptr());
        // The state the activation restores on return (the site's, flagged after an announced entry).
        let mut saved = phi;
        if !naive {
            // The two common entries inline: a fresh direct call site's announced callee writes `1` (its
            // saved state flagged with `binds`), a certain site's announced callee nothing; any other in
            // `enter_slow`.
            let pcallee = gep(b, TLS_CALLEE);
            let announced = LLVMBuildLoad2(b, i64t, pcallee, c"".as_ptr());
            LLVMBuildStore(b, c(0), pcallee);
            let mine = LLVMBuildAdd(b, id, c(1), c"".as_ptr());
            let at_certain = LLVMBuildICmp(
                b,
                LLVMIntPredicate::LLVMIntNE,
                LLVMBuildAnd(b, phi, c(STATE_CERTAIN), c"".as_ptr()),
                c(0),
                c"".as_ptr(),
            );
            let certain_call = LLVMBuildICmp(
                b,
                LLVMIntPredicate::LLVMIntEQ,
                announced,
                LLVMBuildOr(b, mine, c(CALLEE_CERTAIN), c"".as_ptr()),
                c"".as_ptr(),
            );
            let quick = LLVMAppendBasicBlockInContext(ctx, enter, c"certain".as_ptr());
            let direct = LLVMAppendBasicBlockInContext(ctx, enter, c"direct?".as_ptr());
            let fresh = LLVMAppendBasicBlockInContext(ctx, enter, c"direct".as_ptr());
            let bit = LLVMAppendBasicBlockInContext(ctx, enter, c"bit".as_ptr());
            let other = LLVMAppendBasicBlockInContext(ctx, enter, c"other".as_ptr());
            let written = LLVMAppendBasicBlockInContext(ctx, enter, c"marked".as_ptr());
            LLVMBuildCondBr(b, certain_call, quick, direct);
            LLVMPositionBuilderAtEnd(b, quick);
            LLVMBuildCondBr(b, at_certain, written, other);
            LLVMPositionBuilderAtEnd(b, direct);
            let is_mine = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, announced, mine, c"".as_ptr());
            LLVMBuildCondBr(b, is_mine, fresh, other);
            LLVMPositionBuilderAtEnd(b, fresh);
            LLVMBuildCondBr(b, at_certain, other, bit);
            LLVMPositionBuilderAtEnd(b, bit);
            LLVMBuildCall2(b, put_ty, put, [c(1), c(1)].as_mut_ptr(), 2, c"".as_ptr());
            let bound = LLVMBuildOr(b, phi, binds, c"".as_ptr());
            LLVMBuildBr(b, written);
            LLVMPositionBuilderAtEnd(b, other);
            let mut args = [phi, announced, id, binds];
            let slow_saved =
                LLVMBuildCall2(b, LLVMGlobalGetValueType(enter_slow), enter_slow, args.as_mut_ptr(), 4, c"".as_ptr());
            LLVMBuildBr(b, written);
            LLVMPositionBuilderAtEnd(b, written);
            let merged = LLVMBuildPhi(b, i64t, c"".as_ptr());
            let mut vals = [phi, bound, slow_saved];
            let mut blocks = [quick, bit, other];
            LLVMAddIncoming(merged, vals.as_mut_ptr(), blocks.as_mut_ptr(), 3);
            saved = merged;
        }
        // The shadow stack (every traced thread has one: flight recorder, regions, crash flush): this
        // activation's entry; a sync if one is wanted.
        let shadow = LLVMAppendBasicBlockInContext(ctx, enter, c"shadow".as_ptr());
        let want = LLVMAppendBasicBlockInContext(ctx, enter, c"sync".as_ptr());
        let out = LLVMAppendBasicBlockInContext(ctx, enter, c"out".as_ptr());
        let p = LLVMBuildLoad2(b, i64t, gep(b, TLS_SHADOW), c"".as_ptr());
        let has = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, p, c(0), c"".as_ptr());
        LLVMBuildCondBr(b, has, shadow, out);
        LLVMPositionBuilderAtEnd(b, shadow);
        let base = LLVMBuildIntToPtr(b, LLVMBuildAnd(b, p, c(!1), c"".as_ptr()), ptrt, c"".as_ptr());
        let mut ix = [LLVMBuildAnd(b, d, c(SHADOW_ENTRIES - 1), c"".as_ptr())];
        let slot = LLVMBuildInBoundsGEP2(b, i64t, base, ix.as_mut_ptr(), 1, c"".as_ptr());
        // shadow_entry(saved, body state, id)
        let site = LLVMBuildAnd(b, saved, c(!0xffff_ffff), c"".as_ptr());
        let high = LLVMBuildAnd(b, d, c(0xfff0_0000), c"".as_ptr());
        let entry = LLVMBuildOr(b, LLVMBuildOr(b, site, high, c"".as_ptr()), id, c"".as_ptr());
        LLVMBuildStore(b, entry, slot);
        let wanted =
            LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, LLVMBuildAnd(b, p, c(1), c"".as_ptr()), c(0), c"".as_ptr());
        LLVMBuildCondBr(b, wanted, want, out);
        LLVMPositionBuilderAtEnd(b, want);
        let sync = runtime(m, symbols::TRACE_SYNC, LLVMFunctionType(voidt, fp.as_mut_ptr(), 1, 0));
        let mut args = [tls];
        LLVMBuildCall2(b, LLVMGlobalGetValueType(sync), sync, args.as_mut_ptr(), 1, c"".as_ptr());
        LLVMBuildBr(b, out);
        LLVMPositionBuilderAtEnd(b, out);
        LLVMBuildRet(b, saved);
    }

    // The site's return in its own state: the body state back, then Done — `00` at a fresh direct call
    // site (its callee never entered), else `0`.
    let done_here = |b: LLVMBuilderRef, pstate: LLVMValueRef, d: LLVMValueRef| {
        LLVMBuildStore(b, d, pstate);
        if !naive {
            let mut args = [c(0), done_width(b)];
            LLVMBuildCall2(b, put_ty, put, args.as_mut_ptr(), 2, c"".as_ptr());
        }
    };
    // done_moved(expect, d, s): a call site's return to a state `s` not its own. A deeper activation's state
    // means untraced code the site called caught an exception or `longjmp` that left traced activations: an
    // abandon marker (ABANDON_ID, the activation's depth, this site's number) is this site's return
    // (`pathprof_core::tracing::regenerate`, "Abandoned activations"). Any other state is abnormal.
    let mut params = [i64t, i64t, i64t];
    let done_moved = cold_helper(m, symbols::TRACE_DONE_MOVED, LLVMFunctionType(voidt, params.as_mut_ptr(), 3, 0));
    {
        let (expect, d, s) = (LLVMGetParam(done_moved, 0), LLVMGetParam(done_moved, 1), LLVMGetParam(done_moved, 2));
        let entry = LLVMAppendBasicBlockInContext(ctx, done_moved, c"entry".as_ptr());
        let left = LLVMAppendBasicBlockInContext(ctx, done_moved, c"abandoned".as_ptr());
        let odd = LLVMAppendBasicBlockInContext(ctx, done_moved, c"abnormal".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let pstate = gep(b, TLS_STATE);
        // Deeper: the state's depth part (its low word) beyond this site's own state, d + 1.
        let low = LLVMBuildAnd(b, s, c(0xffff_ffff), c"".as_ptr());
        let deeper =
            LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntUGT, low, LLVMBuildAdd(b, d, c(1), c"".as_ptr()), c"".as_ptr());
        LLVMBuildCondBr(b, deeper, left, odd);
        LLVMPositionBuilderAtEnd(b, left);
        LLVMBuildStore(b, d, pstate);
        if !naive {
            let depth = LLVMBuildLShr(b, d, c(1), c"".as_ptr());
            let site = LLVMBuildAnd(b, LLVMBuildLShr(b, expect, c(32), c"".as_ptr()), c(0x7fff_ffff), c"".as_ptr());
            let (mv, mw) = marker_here(b, u64::from(ABANDON_ID));
            for (v, w) in [(mv, mw), (ordered(b, depth, c(32)), c(32)), (ordered(b, site, c(32)), c(32))] {
                LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
            }
        }
        LLVMBuildRetVoid(b);
        LLVMPositionBuilderAtEnd(b, odd);
        let mut args = [tls];
        LLVMBuildCall2(b, LLVMGlobalGetValueType(abnormal), abnormal, args.as_mut_ptr(), 1, c"".as_ptr());
        done_here(b, pstate, d);
        LLVMBuildRetVoid(b);
    }
    // done(expect, d): the call site's state must still be there (else `done_moved`); Done = one 0 bit.
    let mut params = [i64t, i64t];
    let done = helper(m, symbols::TRACE_DONE, LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0));
    {
        let (expect, d) = (LLVMGetParam(done, 0), LLVMGetParam(done, 1));
        let entry = LLVMAppendBasicBlockInContext(ctx, done, c"entry".as_ptr());
        let slow = LLVMAppendBasicBlockInContext(ctx, done, c"moved".as_ptr());
        let go = LLVMAppendBasicBlockInContext(ctx, done, c"go".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let pstate = gep(b, TLS_STATE);
        let s = LLVMBuildLoad2(b, i64t, pstate, c"".as_ptr());
        let same = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, s, expect, c"".as_ptr());
        LLVMBuildCondBr(b, same, go, slow);
        LLVMPositionBuilderAtEnd(b, slow);
        let mut args = [expect, d, s];
        LLVMBuildCall2(b, LLVMGlobalGetValueType(done_moved), done_moved, args.as_mut_ptr(), 3, c"".as_ptr());
        LLVMBuildRetVoid(b);
        LLVMPositionBuilderAtEnd(b, go);
        done_here(b, pstate, d);
        LLVMBuildRetVoid(b);
    }
    // done_direct(expect, d): a direct call site's return. Its announced callee began there and returned (it
    // flagged the state it restored): the site is done, no Done. Otherwise as `done`.
    let mut params = [i64t, i64t];
    let done_direct = helper(m, symbols::TRACE_DONE_DIRECT, LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0));
    {
        let (expect, d) = (LLVMGetParam(done_direct, 0), LLVMGetParam(done_direct, 1));
        let entry = LLVMAppendBasicBlockInContext(ctx, done_direct, c"entry".as_ptr());
        let quiet = LLVMAppendBasicBlockInContext(ctx, done_direct, c"bound".as_ptr());
        let other = LLVMAppendBasicBlockInContext(ctx, done_direct, c"done".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let s = LLVMBuildLoad2(b, i64t, gep(b, TLS_STATE), c"".as_ptr());
        let flagged = LLVMBuildOr(b, expect, c(STATE_CERTAIN), c"".as_ptr());
        let bound = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, s, flagged, c"".as_ptr());
        LLVMBuildCondBr(b, bound, quiet, other);
        LLVMPositionBuilderAtEnd(b, quiet);
        LLVMBuildStore(b, d, gep(b, TLS_STATE));
        LLVMBuildRetVoid(b);
        LLVMPositionBuilderAtEnd(b, other);
        LLVMBuildCall2(b, LLVMGlobalGetValueType(done), done, [expect, d].as_mut_ptr(), 2, c"".as_ptr());
        LLVMBuildRetVoid(b);
    }
    // done_certain(expect, d): a certain call site's return: its state still there and its callee entered
    // (which took the announcement), else an abnormal transfer; no Done.
    let mut params = [i64t, i64t];
    let done_certain = helper(m, symbols::TRACE_DONE_CERTAIN, LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0));
    {
        let (expect, d) = (LLVMGetParam(done_certain, 0), LLVMGetParam(done_certain, 1));
        let entry = LLVMAppendBasicBlockInContext(ctx, done_certain, c"entry".as_ptr());
        let slow = LLVMAppendBasicBlockInContext(ctx, done_certain, c"moved".as_ptr());
        let go = LLVMAppendBasicBlockInContext(ctx, done_certain, c"go".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let pstate = gep(b, TLS_STATE);
        let pcallee = gep(b, TLS_CALLEE);
        let s = LLVMBuildLoad2(b, i64t, pstate, c"".as_ptr());
        let announced = LLVMBuildLoad2(b, i64t, pcallee, c"".as_ptr());
        let same = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, s, expect, c"".as_ptr());
        let taken = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, announced, c(0), c"".as_ptr());
        LLVMBuildCondBr(b, LLVMBuildAnd(b, same, taken, c"".as_ptr()), go, slow);
        LLVMPositionBuilderAtEnd(b, slow);
        let mut args = [tls];
        LLVMBuildCall2(b, LLVMGlobalGetValueType(abnormal), abnormal, args.as_mut_ptr(), 1, c"".as_ptr());
        LLVMBuildStore(b, c(0), pcallee);
        LLVMBuildBr(b, go);
        LLVMPositionBuilderAtEnd(b, go);
        LLVMBuildStore(b, d, pstate);
        LLVMBuildRetVoid(b);
    }
    // resync(expect, d, id, block, call): the setjmp call's state still there is its first return (Done);
    // otherwise a longjmp came back: a resync marker (RESYNC_ID, id, depth, block, call) replaces the Done.
    // resync_again(d, id, block, call, expect, from): the resync marker after a longjmp came back (naive items
    // need none), in the stream of the activation it came back to: the runtime's landing
    // (`__pathprof_trace_landing(tls, expect, d, sp, id, from)`, with the setjmp site's state, the caller's stack
    // pointer, its function and the state the longjmp left) first gives the thread back the stream a signal
    // handler interrupted, when the longjmp left the handler for it, and marks the stream abnormal when the
    // marker would fit none of its activations (a longjmp to another stack's frame: coroutines switched with
    // setjmp/longjmp).
    let mut params = [i64t, i64t, i64t, i64t, i64t, i64t];
    let resync_again = cold_helper(m, symbols::TRACE_RESYNC_AGAIN, LLVMFunctionType(voidt, params.as_mut_ptr(), 6, 0));
    let mut landing_params = [ptrt, i64t, i64t, i64t, i64t, i64t];
    let landing = runtime(m, symbols::TRACE_LANDING, LLVMFunctionType(voidt, landing_params.as_mut_ptr(), 6, 0));
    {
        let p = |i| LLVMGetParam(resync_again, i);
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, resync_again, c"entry".as_ptr()));
        let aora_ty = LLVMFunctionType(ptrt, ptr::null_mut(), 0, 0);
        let aora = intrinsic(m, "llvm.addressofreturnaddress.p0", aora_ty);
        let slot = LLVMBuildCall2(b, aora_ty, aora, ptr::null_mut(), 0, c"".as_ptr());
        // The caller's stack pointer at the call: just above the return address's slot.
        let slot = LLVMBuildPtrToInt(b, slot, i64t, c"".as_ptr());
        let sp = LLVMBuildAdd(b, slot, c(8), c"".as_ptr());
        let mut args = [tls, p(4), p(0), sp, p(1), p(5)];
        LLVMBuildCall2(b, LLVMGlobalGetValueType(landing), landing, args.as_mut_ptr(), 6, c"".as_ptr());
        if !naive {
            let depth = LLVMBuildLShr(b, p(0), c(1), c"".as_ptr());
            let fb = u64::from(FUNC_ID_BITS);
            let (mv, mw) = marker_here(b, u64::from(RESYNC_ID));
            let field = |v, w| (ordered(b, v, c(w)), c(w));
            for (v, w) in [(mv, mw), field(p(1), fb), field(depth, 32), field(p(2), 32), field(p(3), 32)] {
                LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
            }
        }
        LLVMBuildRetVoid(b);
    }
    let mut params = [i64t, i64t, i64t, i64t, i64t];
    let resync = helper(m, symbols::TRACE_RESYNC, LLVMFunctionType(voidt, params.as_mut_ptr(), 5, 0));
    {
        let p = |i| LLVMGetParam(resync, i);
        let entry = LLVMAppendBasicBlockInContext(ctx, resync, c"entry".as_ptr());
        let again = LLVMAppendBasicBlockInContext(ctx, resync, c"again".as_ptr());
        let first = LLVMAppendBasicBlockInContext(ctx, resync, c"first".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let pstate = gep(b, TLS_STATE);
        let s = LLVMBuildLoad2(b, i64t, pstate, c"".as_ptr());
        LLVMBuildStore(b, p(1), pstate);
        let same = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntEQ, s, p(0), c"".as_ptr());
        LLVMBuildCondBr(b, same, first, again);
        LLVMPositionBuilderAtEnd(b, first);
        if !naive {
            LLVMBuildCall2(b, put_ty, put, [c(0), done_width(b)].as_mut_ptr(), 2, c"".as_ptr());
        }
        LLVMBuildRetVoid(b);
        LLVMPositionBuilderAtEnd(b, again);
        let mut args = [p(1), p(2), p(3), p(4), p(0), s];
        LLVMBuildCall2(b, LLVMGlobalGetValueType(resync_again), resync_again, args.as_mut_ptr(), 6, c"".as_ptr());
        LLVMBuildRetVoid(b);
    }
    // unwind(d, id): a landing pad's start: the activation's body state back (the exception left deeper
    // activations inside their calls), then the unwind marker (UNWIND_ID, id, depth). Out of line: an
    // exception's unwinding costs microseconds, the call nothing.
    let mut params = [i64t, i64t];
    let unwind = cold_helper(m, symbols::TRACE_UNWIND, LLVMFunctionType(voidt, params.as_mut_ptr(), 2, 0));
    {
        let (d, id) = (LLVMGetParam(unwind, 0), LLVMGetParam(unwind, 1));
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, unwind, c"entry".as_ptr()));
        LLVMBuildStore(b, d, gep(b, TLS_STATE));
        if !naive {
            let depth = LLVMBuildLShr(b, d, c(1), c"".as_ptr());
            let fb = u64::from(FUNC_ID_BITS);
            let (mv, mw) = marker_here(b, u64::from(UNWIND_ID));
            let field = |v, w| (ordered(b, v, c(w)), c(w));
            for (v, w) in [(mv, mw), field(id, fb), field(depth, 32)] {
                LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
            }
        }
        LLVMBuildRetVoid(b);
    }
    // put_loop(stay, exit, count): what the loop's test would have written bit by bit, in one put while it fits
    // (count < 32: `count` stay bits and the exit bit are count + 1 ≤ 32 bits), else out of line 32 stay bits
    // at a time. `stay` and `exit` are constants at every call, so the inlined part folds to a mask and a shift.
    let mut params = [i64t, i64t, i64t];
    let put_loop_ty = LLVMFunctionType(voidt, params.as_mut_ptr(), 3, 0);
    let put_loop = helper(m, symbols::TRACE_PUT_LOOP, put_loop_ty);
    let put_loop_long = outlined(m, symbols::TRACE_PUT_LOOP_LONG, put_loop_ty);
    // `n` copies of the bit `stay` (n < 64), then the bit `exit`: (value in stream order, width) for put.
    let stays_then_exit = |b: LLVMBuilderRef, stay: LLVMValueRef, exit: LLVMValueRef, n: LLVMValueRef| {
        let ones = LLVMBuildSub(b, LLVMBuildShl(b, c(1), n, c"".as_ptr()), c(1), c"".as_ptr());
        let stays = LLVMBuildAnd(b, ones, LLVMBuildSub(b, c(0), stay, c"".as_ptr()), c"".as_ptr());
        let v = LLVMBuildOr(b, LLVMBuildShl(b, stays, c(1), c"".as_ptr()), exit, c"".as_ptr());
        (v, LLVMBuildAdd(b, n, c(1), c"".as_ptr()))
    };
    {
        let (stay, exit, count) = (LLVMGetParam(put_loop, 0), LLVMGetParam(put_loop, 1), LLVMGetParam(put_loop, 2));
        let entry = LLVMAppendBasicBlockInContext(ctx, put_loop, c"entry".as_ptr());
        let short = LLVMAppendBasicBlockInContext(ctx, put_loop, c"short".as_ptr());
        let long = LLVMAppendBasicBlockInContext(ctx, put_loop, c"long".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let fits = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntULT, count, c(32), c"".as_ptr());
        LLVMBuildCondBr(b, fits, short, long);
        LLVMPositionBuilderAtEnd(b, short);
        let (v, w) = stays_then_exit(b, stay, exit, count);
        LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
        LLVMBuildRetVoid(b);
        LLVMPositionBuilderAtEnd(b, long);
        LLVMBuildCall2(b, put_loop_ty, put_loop_long, [stay, exit, count].as_mut_ptr(), 3, c"".as_ptr());
        LLVMBuildRetVoid(b);
    }
    {
        let (stay, exit, count) =
            (LLVMGetParam(put_loop_long, 0), LLVMGetParam(put_loop_long, 1), LLVMGetParam(put_loop_long, 2));
        let entry = LLVMAppendBasicBlockInContext(ctx, put_loop_long, c"entry".as_ptr());
        let words = LLVMAppendBasicBlockInContext(ctx, put_loop_long, c"words".as_ptr());
        let tail = LLVMAppendBasicBlockInContext(ctx, put_loop_long, c"tail".as_ptr());
        LLVMPositionBuilderAtEnd(b, entry);
        let word = LLVMBuildAnd(b, c(0xffff_ffff), LLVMBuildSub(b, c(0), stay, c"".as_ptr()), c"".as_ptr());
        LLVMBuildBr(b, words);
        // Called with count ≥ 32: 32 stay bits at a time while 32 or more are left.
        LLVMPositionBuilderAtEnd(b, words);
        let left = LLVMBuildPhi(b, i64t, c"".as_ptr());
        LLVMBuildCall2(b, put_ty, put, [word, c(32)].as_mut_ptr(), 2, c"".as_ptr());
        let rest = LLVMBuildSub(b, left, c(32), c"".as_ptr());
        let more = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntUGE, rest, c(32), c"".as_ptr());
        LLVMBuildCondBr(b, more, words, tail);
        let mut vals = [count, rest];
        let mut from = [entry, words];
        LLVMAddIncoming(left, vals.as_mut_ptr(), from.as_mut_ptr(), 2);
        LLVMPositionBuilderAtEnd(b, tail);
        let (v, w) = stays_then_exit(b, stay, exit, rest);
        LLVMBuildCall2(b, put_ty, put, [v, w].as_mut_ptr(), 2, c"".as_ptr());
        LLVMBuildRetVoid(b);
    }
    Helpers { put, put_ty, enter, done, done_direct, done_certain, resync, unwind, put_loop }
}

/// `v`'s `w` (≤ 32) low bits in stream order (`pathprof_format::trace_layout::stream_order`) for `put`, where `v`
/// is not a constant (ids, depths, cache slots: the markers' fields, written rarely).
pub(crate) unsafe fn in_stream_order(
    m: LLVMModuleRef,
    b: LLVMBuilderRef,
    v: LLVMValueRef,
    w: LLVMValueRef,
) -> LLVMValueRef {
    let i64t = LLVMInt64TypeInContext(LLVMGetModuleContext(m));
    let c = |v: u64| LLVMConstInt(i64t, v, 0);
    // >> (64 − w) as >> 1 >> (63 − w): defined for w = 0 too.
    let r = LLVMBuildLShr(b, bit_reversed(m, b, v), c(1), c"".as_ptr());
    LLVMBuildLShr(b, r, LLVMBuildSub(b, c(63), w, c"".as_ptr()), c"".as_ptr())
}

/// `llvm.bitreverse.i64(v)`.
unsafe fn bit_reversed(m: LLVMModuleRef, b: LLVMBuilderRef, v: LLVMValueRef) -> LLVMValueRef {
    let i64t = LLVMInt64TypeInContext(LLVMGetModuleContext(m));
    let ty = LLVMFunctionType(i64t, [i64t].as_mut_ptr(), 1, 0);
    LLVMBuildCall2(b, ty, intrinsic(m, "llvm.bitreverse.i64", ty), [v].as_mut_ptr(), 1, c"".as_ptr())
}

/// The declaration of the LLVM intrinsic `name` of type `fty`.
unsafe fn intrinsic(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    function_once(m, name, |c| LLVMAddFunction(m, c.as_ptr(), fty))
}

/// Adds an internal `nounwind` function of type `fty` with function attributes `attrs`.
unsafe fn internal_function(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef, attrs: &[&str]) -> LLVMValueRef {
    let ctx = LLVMGetModuleContext(m);
    let f = LLVMAddFunction(m, cstr(name).as_ptr(), fty);
    LLVMSetLinkage(f, LLVMLinkage::LLVMInternalLinkage);
    for attr in attrs.iter().chain(&["nounwind"]) {
        LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, ir::attr_kind(attr), 0));
    }
    if attrs.contains(&"noinline") {
        ir::place_apart(m, f);
    }
    f
}

/// An `alwaysinline` helper: the common path every site or entry runs.
unsafe fn helper(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    internal_function(m, name, fty, &["alwaysinline"])
}

/// A `noinline` helper: a path all sites share out of line, so that what each site or entry inlines stays small.
/// Inlined everywhere, the rare transfers' markers (abandon, unwind, resync) cost about 0.7 KB of code per call
/// site and 3.5 KB per `invoke`, and an entry's marker made an instrumented one-line function too big for the
/// inliner: LLVM's optimiser then took most of a trace build's compile time.
unsafe fn outlined(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    internal_function(m, name, fty, &["noinline"])
}

/// [`outlined`], and `cold`: the slow path of a rare event (its callers' branches to it are laid out as unlikely).
unsafe fn cold_helper(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    internal_function(m, name, fty, &["noinline", "cold"])
}

/// Declares a runtime function of type `fty` (cold: the slow paths).
unsafe fn runtime(m: LLVMModuleRef, name: &str, fty: LLVMTypeRef) -> LLVMValueRef {
    function_once(m, name, |c| {
        let ctx = LLVMGetModuleContext(m);
        let f = LLVMAddFunction(m, c.as_ptr(), fty);
        for attr in ["nounwind", "cold"] {
            LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, ir::attr_kind(attr), 0));
        }
        f
    })
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("internal names contain no NUL")
}
