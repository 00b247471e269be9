//! Observing a slice's criterion (`PATHPROF_SLICE_OBSERVE=slice|whole`, a testing aid for
//! `test-suite/corpus/slice_check.py`): every value an instruction at the criterion's line computes is passed
//! to `void pathprof_slice_observe(i64 key, i64 value)`, which the caller links in (the checker's prints a hash
//! of the sequence at exit). With `slice` the calls go into the executable slice after the rewrite; with
//! `whole` the function is not sliced and the calls go into the whole program — so the two builds' value
//! sequences at the criterion, which Ball's Theorem 6.1 says are equal, can be compared on real runs.
//!
//! The calls are added after slicing, so they never shape a slice. What is observed: an integer result (zero-
//! extended or truncated to 64 bits), a floating result's bits, a pointer's null-ness only (addresses differ
//! between the builds: the slice's frames and code are smaller), a `store`'s and a `ret`'s value operand the
//! same way, and a jump criterion (`return;`) as the constant 1 each time it runs. `key` is the function's name
//! hash with the instruction's index among the line's instructions.

use crate::ir;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::debuginfo::LLVMInstructionGetDebugLoc;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMIntPredicate, LLVMOpcode, LLVMTypeKind};

/// Name of the observer the checker links in.
pub const OBSERVER: &str = "pathprof_slice_observe";

/// Adds an observer call for each of `insts` (the criterion's instructions of function `f`, in layout order,
/// all still in `f`).
pub fn observe(f: LLVMValueRef, insts: &[LLVMValueRef]) {
    let fn_key =
        ir::name(f).bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    unsafe {
        let m = LLVMGetGlobalParent(f);
        let ctx = LLVMGetModuleContext(m);
        let i64t = LLVMInt64TypeInContext(ctx);
        let mut params = [i64t, i64t];
        let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 2, 0);
        let name = std::ffi::CString::new(OBSERVER).expect("no NUL");
        let mut callee = LLVMGetNamedFunction(m, name.as_ptr());
        if callee.is_null() {
            callee = LLVMAddFunction(m, name.as_ptr(), fty);
        }
        let b = LLVMCreateBuilderInContext(ctx);
        for (k, &i) in insts.iter().enumerate() {
            let (value, before) = match ir::opcode(i) {
                LLVMOpcode::LLVMStore => (LLVMGetOperand(i, 0), i),
                LLVMOpcode::LLVMRet if LLVMGetNumOperands(i) == 1 => (LLVMGetOperand(i, 0), i),
                LLVMOpcode::LLVMPHI => {
                    let bb = LLVMGetInstructionParent(i);
                    (i, ir::first_insertion_point(bb).expect("a block has a terminator"))
                }
                // A jump criterion (`return;`): its value is that it runs.
                LLVMOpcode::LLVMBr if LLVMGetNumOperands(i) == 1 => (LLVMConstInt(i64t, 1, 0), i),
                _ if LLVMIsATerminatorInst(i).is_null() => (i, LLVMGetNextInstruction(i)),
                _ => continue,
            };
            LLVMPositionBuilderBefore(b, before);
            // The instruction's own debug location, so the call is at the criterion's line.
            LLVMSetCurrentDebugLocation2(b, LLVMInstructionGetDebugLoc(i));
            let Some(v) = as_i64(b, value, i64t, ctx) else { continue };
            let key = LLVMConstInt(i64t, fn_key.wrapping_mul(1 << 16).wrapping_add(k as u64), 0);
            let mut args = [key, v];
            LLVMBuildCall2(b, fty, callee, args.as_mut_ptr(), 2, c"".as_ptr());
        }
        LLVMDisposeBuilder(b);
    }
}

/// `v` as an i64 per the module docs, or `None` for types not observed (aggregates, vectors, void).
unsafe fn as_i64(b: LLVMBuilderRef, v: LLVMValueRef, i64t: LLVMTypeRef, ctx: LLVMContextRef) -> Option<LLVMValueRef> {
    let t = LLVMTypeOf(v);
    Some(match LLVMGetTypeKind(t) {
        LLVMTypeKind::LLVMIntegerTypeKind => {
            if LLVMGetIntTypeWidth(t) > 64 {
                LLVMBuildTrunc(b, v, i64t, c"".as_ptr())
            } else {
                LLVMBuildZExtOrBitCast(b, v, i64t, c"".as_ptr())
            }
        }
        LLVMTypeKind::LLVMPointerTypeKind => {
            let nonnull = LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntNE, v, LLVMConstNull(t), c"".as_ptr());
            LLVMBuildZExt(b, nonnull, i64t, c"".as_ptr())
        }
        LLVMTypeKind::LLVMFloatTypeKind => {
            let bits = LLVMBuildBitCast(b, v, LLVMInt32TypeInContext(ctx), c"".as_ptr());
            LLVMBuildZExt(b, bits, i64t, c"".as_ptr())
        }
        LLVMTypeKind::LLVMDoubleTypeKind => LLVMBuildBitCast(b, v, i64t, c"".as_ptr()),
        _ => return None,
    })
}
