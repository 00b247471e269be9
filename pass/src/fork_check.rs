//! Fork re-entry checks: around every call that may be in flight when the program calls `fork()`, compare the
//! runtime's fork generation before and after, and record a re-entry when it changed.
//!
//! A `fork()`ed child starts with zeroed counters (the parent reports what ran before the fork) and moves the
//! generation `__pathprof_fork_gen` on, in its `pthread_atfork` child handler; nothing else changes it. So after a
//! call returns (normally, or into a landing pad), a changed generation means: the call was in flight at a fork
//! and this process is a child resuming the activation, which it never entered. The cold branch then calls
//! `__pathprof_fork_reentry(desc, function word, key)` once; calls made later read the new generation. The reader
//! turns each re-entry into a virtual edge EXIT→B (`pathprof_core::reentry`), which keeps every count exact.
//!
//! Which calls: those of [`crate::cfg_build::FunctionGraph::abnormal_calls`] — every call LLVM does not know to be
//! `nounwind willreturn` (or that the module's inference proves safe), i.e. every call that can reach `fork`,
//! directly or through a function pointer — except `returns_twice` calls (`setjmp`: its block's re-entries by
//! `longjmp` are a separate case, and `vfork` changes no generation) and `noreturn` calls (nothing runs after them).
//! The key is what the block counted on arrival (the truncated path number: path, context and piecewise modes) or
//! the block itself (edge mode, and interprocedural call blocks, whose callee counts the path).
//!
//! Cost per checked call: a load before it (kept across the call) and a load, compare and branch after it; the
//! loads are `monotonic` (plain `mov` on x86-64 and AArch64), and the branch is weighted unlikely.

use crate::ir;
use crate::shim;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMAtomicOrdering, LLVMIntPredicate, LLVMOpcode};
use pathprof_format::layout::{SPARSE_REENTRY, SPARSE_REENTRY_BLOCK};
use std::collections::BTreeMap;
use std::ffi::CString;

/// What a re-entry records: the block's arrival key (a truncated path number) or the block.
#[derive(Copy, Clone, Debug)]
pub enum Key {
    /// A number known at compile time (a block, or a constant path number).
    Const(u64),
    /// A path number computed at run time, available (dominating) at the call.
    Value(LLVMValueRef),
}

/// One call to check.
#[derive(Copy, Clone, Debug)]
pub struct Guard {
    /// The `call` or `invoke`.
    pub call: LLVMValueRef,
    /// The sparse entry's function word: the function index with `SPARSE_REENTRY` (and `SPARSE_REENTRY_BLOCK`).
    pub word: u64,
    /// What to record.
    pub key: Key,
}

impl Guard {
    /// A re-entry of the truncated path `key` of function `function`.
    pub fn path(call: LLVMValueRef, function: u64, key: Key) -> Guard {
        Guard { call, word: SPARSE_REENTRY | function, key }
    }

    /// A re-entry of block `block` of function `function`.
    pub fn block(call: LLVMValueRef, function: u64, block: u32) -> Guard {
        Guard { call, word: SPARSE_REENTRY | SPARSE_REENTRY_BLOCK | function, key: Key::Const(u64::from(block)) }
    }
}

/// A guarded invoke into a landing pad: its block, the generation before it, the word and the key.
type Unwinding = (LLVMBasicBlockRef, LLVMValueRef, u64, Key);

/// The module's generation variable, runtime function and descriptor.
pub struct ForkChecks {
    b: LLVMBuilderRef,
    i64t: LLVMTypeRef,
    gen: LLVMValueRef,
    record: LLVMValueRef,
    desc: LLVMValueRef,
    returns_twice: u32,
    noreturn: u32,
}

impl ForkChecks {
    /// Declares `__pathprof_fork_gen` and `__pathprof_fork_reentry` in `m`; `desc` is the module's descriptor.
    pub fn new(m: LLVMModuleRef, desc: LLVMValueRef) -> ForkChecks {
        unsafe {
            let ctx = LLVMGetModuleContext(m);
            let i64t = LLVMInt64TypeInContext(ctx);
            let ptrt = LLVMPointerTypeInContext(ctx, 0);
            let gen_name = CString::new("__pathprof_fork_gen").expect("no NUL");
            let mut gen = LLVMGetNamedGlobal(m, gen_name.as_ptr());
            if gen.is_null() {
                gen = LLVMAddGlobal(m, i64t, gen_name.as_ptr());
                LLVMSetAlignment(gen, 8);
            }
            let fn_name = CString::new("__pathprof_fork_reentry").expect("no NUL");
            let mut record = LLVMGetNamedFunction(m, fn_name.as_ptr());
            if record.is_null() {
                let mut params = [ptrt, i64t, i64t];
                let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 3, 0);
                record = LLVMAddFunction(m, fn_name.as_ptr(), fty);
                for a in ["cold", "nounwind", "noinline"] {
                    let attr = LLVMCreateEnumAttribute(ctx, ir::attr_kind(a), 0);
                    LLVMAddAttributeAtIndex(record, u32::MAX, attr);
                }
            }
            ForkChecks {
                b: LLVMCreateBuilderInContext(ctx),
                i64t,
                gen,
                record,
                desc,
                returns_twice: ir::attr_kind("returns_twice"),
                noreturn: ir::attr_kind("noreturn"),
            }
        }
    }

    /// Whether a call needs a check: not `returns_twice` (`setjmp`, `vfork`), not `noreturn`.
    pub fn wants(&self, call: LLVMValueRef) -> bool {
        let callee = ir::called_function(call);
        let has = |kind| ir::call_has_attr(call, kind) || callee.is_some_and(|f| ir::fn_has_attr(f, kind));
        !has(self.returns_twice) && !has(self.noreturn)
    }

    fn load_gen(&self, before: LLVMValueRef) -> LLVMValueRef {
        unsafe {
            LLVMPositionBuilderBefore(self.b, before);
            let v = LLVMBuildLoad2(self.b, self.i64t, self.gen, c"pathprof.forkgen".as_ptr());
            LLVMSetOrdering(v, LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic);
            LLVMSetAlignment(v, 8);
            v
        }
    }

    fn key_value(&self, k: Key) -> LLVMValueRef {
        match k {
            Key::Const(c) => unsafe { LLVMConstInt(self.i64t, c, 0) },
            Key::Value(v) => v,
        }
    }

    /// After `before`'s position: if the generation differs from `before_gen`, record `word`/`key`.
    fn check(&self, at: LLVMValueRef, before_gen: LLVMValueRef, word: LLVMValueRef, key: LLVMValueRef) {
        unsafe {
            let now = self.load_gen(at);
            let changed = LLVMBuildICmp(self.b, LLVMIntPredicate::LLVMIntNE, before_gen, now, c"pathprof.forked".as_ptr());
            let then = shim::pathprof_shim_if_then_cold(changed, at);
            LLVMPositionBuilderBefore(self.b, then);
            let mut args = [self.desc, word, key];
            let fty = LLVMGlobalGetValueType(self.record);
            LLVMBuildCall2(self.b, fty, self.record, args.as_mut_ptr(), 3, c"".as_ptr());
        }
    }

    /// Emits the checks of one function's `guards` (after all its other instrumentation: the checks split blocks).
    pub fn emit(&self, guards: &[Guard]) {
        // Landing pads: per pad, each guarded invoke that unwinds to it.
        let mut pads: BTreeMap<usize, (LLVMBasicBlockRef, Vec<Unwinding>)> = BTreeMap::new();
        for g in guards {
            let before = self.load_gen(g.call);
            let word = unsafe { LLVMConstInt(self.i64t, g.word, 0) };
            let key = self.key_value(g.key);
            if ir::opcode(g.call) == LLVMOpcode::LLVMInvoke {
                unsafe {
                    let normal = LLVMGetNormalDest(g.call);
                    let single_pred = predecessors(normal).len() == 1;
                    let bb = if single_pred { normal } else { shim::pathprof_shim_split_edge(g.call, 0) };
                    assert!(!bb.is_null(), "LLVM refused to split an invoke's normal edge");
                    let at = ir::first_insertion_point(bb).expect("a block has a terminator");
                    self.check(at, before, word, key);
                    let pad = LLVMGetUnwindDest(g.call);
                    let from = LLVMGetInstructionParent(g.call);
                    pads.entry(pad as usize).or_insert((pad, Vec::new())).1.push((from, before, g.word, g.key));
                }
            } else {
                let next = unsafe { LLVMGetNextInstruction(g.call) };
                assert!(!next.is_null(), "a call is not a terminator");
                self.check(next, before, word, key);
            }
        }
        for (_, (pad, guarded)) in pads {
            self.check_pad(pad, &guarded);
        }
    }

    /// A landing pad reached from guarded invokes: PHIs pick the generation, word and key of the invoke that
    /// unwound; other invokes into the pad (none can be in flight at a fork) pass a word without
    /// `SPARSE_REENTRY`, which the runtime ignores.
    fn check_pad(&self, pad: LLVMBasicBlockRef, guarded: &[Unwinding]) {
        unsafe {
            let preds = predecessors(pad);
            let mut incoming: Vec<(LLVMBasicBlockRef, LLVMValueRef, LLVMValueRef, LLVMValueRef)> = Vec::new();
            for p in preds {
                let (gen, word, key) = match guarded.iter().find(|g| g.0 == p) {
                    Some(&(_, gen, word, key)) => (gen, LLVMConstInt(self.i64t, word, 0), self.key_value(key)),
                    None => {
                        let term = ir::terminator(p).expect("a block has a terminator");
                        (self.load_gen(term), LLVMConstInt(self.i64t, 0, 0), LLVMConstInt(self.i64t, 0, 0))
                    }
                };
                incoming.push((p, gen, word, key));
            }
            LLVMPositionBuilderBeforeInstrAndDbgRecords(self.b, LLVMGetFirstInstruction(pad));
            let phi = |name: &std::ffi::CStr, pick: fn(&(LLVMBasicBlockRef, LLVMValueRef, LLVMValueRef, LLVMValueRef)) -> LLVMValueRef| {
                let phi = LLVMBuildPhi(self.b, self.i64t, name.as_ptr());
                for i in &incoming {
                    let mut v = [pick(i)];
                    let mut bb = [i.0];
                    LLVMAddIncoming(phi, v.as_mut_ptr(), bb.as_mut_ptr(), 1);
                }
                phi
            };
            let gen = phi(c"pathprof.forkgen.pad", |i| i.1);
            let word = phi(c"pathprof.forkword.pad", |i| i.2);
            let key = phi(c"pathprof.forkkey.pad", |i| i.3);
            let at = ir::first_insertion_point(pad).expect("a block has a terminator");
            self.check(at, gen, word, key);
        }
    }
}

impl Drop for ForkChecks {
    fn drop(&mut self) {
        unsafe { LLVMDisposeBuilder(self.b) }
    }
}

/// The blocks whose terminator has `bb` as a successor (each once), from the block's uses.
fn predecessors(bb: LLVMBasicBlockRef) -> Vec<LLVMBasicBlockRef> {
    let mut out = Vec::new();
    unsafe {
        let mut u = LLVMGetFirstUse(LLVMBasicBlockAsValue(bb));
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !LLVMIsAInstruction(user).is_null() && !LLVMIsATerminatorInst(user).is_null() {
                let p = LLVMGetInstructionParent(user);
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            u = LLVMGetNextUse(u);
        }
    }
    out
}
