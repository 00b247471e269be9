//! Instruments one module: picks the functions to instrument and hands them to the mode — edge and path
//! profiling function by function ([`crate::intraproc_mode`]), or the interprocedural modes over the module as
//! one program ([`crate::interproc_mode`]). Both plan first (no IR changes) and emit only what planned, so a
//! failure never leaves half-instrumented IR behind; the module-level work is [`crate::module_emitter`]'s.

use crate::config::Config;
use crate::ir;
use crate::names::{INSTRUMENTED_MARK, OWN_SYMBOL_PREFIX};
use inkwell::llvm_sys::core::{
    LLVMAddAttributeAtIndex, LLVMAddFunction, LLVMBuildCall2, LLVMBuildPtrToInt, LLVMBuildSExtOrBitCast, LLVMConstInt,
    LLVMCountParamTypes, LLVMCreateBuilderInContext, LLVMCreateEnumAttribute, LLVMDisposeBuilder, LLVMFunctionType,
    LLVMGetFirstUse, LLVMGetIntTypeWidth, LLVMGetLinkage, LLVMGetModuleContext, LLVMGetNamedFunction,
    LLVMGetNextInstruction, LLVMGetNumArgOperands, LLVMGetNumOperands, LLVMGetOperand, LLVMGetParamTypes,
    LLVMGetReturnType, LLVMGetTypeKind, LLVMGlobalGetValueType, LLVMInt32TypeInContext, LLVMInt64TypeInContext,
    LLVMIsFunctionVarArg, LLVMPointerTypeInContext, LLVMPositionBuilderBefore, LLVMReplaceAllUsesWith, LLVMTypeOf,
    LLVMVoidTypeInContext,
};
use inkwell::llvm_sys::debuginfo::{LLVMInstructionGetDebugLoc, LLVMInstructionSetDebugLoc};
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMLinkage, LLVMOpcode, LLVMTypeKind};
use pathprof_format::symbols;
use std::ffi::CString;
use std::os::raw::c_void;

/// Instruments `m` per `config`; returns whether the module changed.
pub fn instrument(m: LLVMModuleRef, fam: *mut c_void, config: &Config) -> Result<bool, String> {
    if ir::has_named_metadata(m, INSTRUMENTED_MARK) {
        return Ok(false);
    }
    let identity = crate::identity::of_module(&ir::module_source_name(m), config);
    let candidates: Vec<LLVMValueRef> = ir::functions(m).into_iter().filter(|&f| should_instrument(f)).collect();
    let mut dropped = 0;
    for &f in &candidates {
        dropped += drop_repeated_indirectbr_destinations(f);
    }
    let changed = if config.mode == pathprof_format::meta::Mode::Trace {
        crate::trace_mode::instrument(m, &candidates, fam, config, identity)
    } else if config.mode.is_interprocedural() {
        crate::interproc_mode::instrument(m, &candidates, fam, config, identity)
    } else {
        crate::intraproc_mode::instrument(m, &candidates, fam, config, identity)
    }?;
    let watched = changed && watch_signal_handlers(m);
    let contexts = changed && config.mode == pathprof_format::meta::Mode::Trace && trace_user_contexts(m);
    let written = changed && write_before_image_ends(m);
    let confined = changed && write_before_confinement(m);
    let forks = changed
        && (redirect(m, "_Fork", symbols::FORK_RAW, |_| true)
            | redirect(m, "clone", symbols::CLONE, |ty| c_type(ty, Int32, &[Pointer, Pointer, Int32, Pointer], true))
            | redirect(m, "syscall", symbols::SYSCALL, |ty| c_type(ty, Int64, &[Int64], true)));
    let clobbers = changed && crate::asm_clobbers::declare_syscall_clobbers(m);
    Ok(changed || dropped > 0 || watched || contexts || written || confined || forks || clobbers)
}

/// Puts a call of the runtime's `symbols::IMAGE_END` right before every direct call of a function that ends the
/// process image without `atexit` handlers (`symbols::IMAGE_ENDERS`: `exec*`, `daemon`, `_exit`, `_Exit`),
/// after everything the mode put there (the arrivals of the activation, promoted counters' stores): the runtime
/// then writes what `exit` would have. Without it a `fork()`ed child that `exec`s or `_exit`s loses what it
/// counted, silently. Declarations only, as for the signal functions. Whether anything changed.
fn write_before_image_ends(m: LLVMModuleRef) -> bool {
    let calls = calls_of_declared(m, &symbols::IMAGE_ENDERS);
    if calls.is_empty() {
        return false;
    }
    // SAFETY: a valid module; every call in `calls` is live.
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let i32t = LLVMInt32TypeInContext(ctx);
        let runtime = crate::globals::runtime_function(m, symbols::IMAGE_END, i32t);
        call_before(m, runtime, &calls, |_, _, how| vec![LLVMConstInt(i32t, u64::from(how), 0)]);
    }
    true
}

/// Puts a call of the runtime's `symbols::CONFINE` right before every direct call of `prctl` (with its option and
/// second argument) and of libseccomp's `seccomp_load` (-1, 0): a call that puts the process in a seccomp sandbox,
/// which forbids the system calls of a profile write, gets the counts written first (`rt/src/sandbox.rs`).
/// Declarations only. Whether anything changed.
fn write_before_confinement(m: LLVMModuleRef) -> bool {
    let calls = calls_of_declared(m, &[("prctl", true), ("seccomp_load", false)]);
    if calls.is_empty() {
        return false;
    }
    // SAFETY: a valid module; every call in `calls` is live, its operands valid.
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let i64t = LLVMInt64TypeInContext(ctx);
        let runtime = crate::globals::function_once(m, symbols::CONFINE, |c| {
            let mut params = [i64t, i64t];
            let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 2, 0);
            LLVMAddFunction(m, c.as_ptr(), fty)
        });
        call_before(m, runtime, &calls, |b, call, is_prctl| {
            if !is_prctl {
                return vec![LLVMConstInt(i64t, u64::MAX, 1), LLVMConstInt(i64t, 0, 0)];
            }
            // prctl's option and second argument as 64-bit integers (0 for one the call does not pass).
            let argument = |i: u32| {
                if i + 1 >= LLVMGetNumOperands(call) as u32 {
                    return LLVMConstInt(i64t, 0, 0);
                }
                let v = LLVMGetOperand(call, i);
                match LLVMGetTypeKind(LLVMTypeOf(v)) {
                    LLVMTypeKind::LLVMIntegerTypeKind => LLVMBuildSExtOrBitCast(b, v, i64t, c"".as_ptr()),
                    LLVMTypeKind::LLVMPointerTypeKind => LLVMBuildPtrToInt(b, v, i64t, c"".as_ptr()),
                    _ => LLVMConstInt(i64t, 0, 0),
                }
            };
            vec![argument(0), argument(1)]
        });
    }
    true
}

/// The direct calls in `m` of the functions `names` declares (not defined in `m`), each with its name's tag.
fn calls_of_declared<T: Copy>(m: LLVMModuleRef, names: &[(&str, T)]) -> Vec<(LLVMValueRef, T)> {
    names
        .iter()
        .filter_map(|&(name, tag)| {
            let name = CString::new(name).unwrap_or_default();
            // SAFETY: a valid module and a NUL-terminated name.
            let f = unsafe { LLVMGetNamedFunction(m, name.as_ptr()) };
            (!f.is_null() && ir::is_declaration(f)).then(|| ir::calls_of(f).into_iter().map(move |c| (c, tag)))
        })
        .flatten()
        .collect()
}

/// Puts a call of `runtime` (marked `nounwind`) with `arguments(builder, call, tag)` right before each call, with
/// the call's debug location (inlined code needs one in a function with debug info).
///
/// # Safety
/// `m` is a valid module holding `runtime` and every call.
unsafe fn call_before<T: Copy>(
    m: LLVMModuleRef,
    runtime: LLVMValueRef,
    calls: &[(LLVMValueRef, T)],
    mut arguments: impl FnMut(LLVMBuilderRef, LLVMValueRef, T) -> Vec<LLVMValueRef>,
) {
    let ctx = LLVMGetModuleContext(m);
    LLVMAddAttributeAtIndex(runtime, u32::MAX, LLVMCreateEnumAttribute(ctx, ir::attr_kind("nounwind"), 0));
    let b = LLVMCreateBuilderInContext(ctx);
    for &(call, tag) in calls {
        LLVMPositionBuilderBefore(b, call);
        let mut args = arguments(b, call, tag);
        let c = LLVMBuildCall2(
            b,
            LLVMGlobalGetValueType(runtime),
            runtime,
            args.as_mut_ptr(),
            args.len() as u32,
            c"".as_ptr(),
        );
        let loc = LLVMInstructionGetDebugLoc(call);
        if !loc.is_null() {
            LLVMInstructionSetDebugLoc(c, loc);
        }
    }
    LLVMDisposeBuilder(b);
}

/// Sends the module's calls of `sigaction` and `signal` to the runtime's (`symbols::SIGACTION`,
/// `symbols::SIGNAL`), which install the program's handler behind a trampoline (`rt/src/handlers.rs`). In the
/// counting modes it notices a handler that never returns — it `longjmp`s or exits out of the activations it
/// interrupted mid-block, which no counter accounts for — and then flags the counts; in trace mode it runs each
/// handler in a trace stream of its own, so the interrupted stream stays whole. Declarations only: a module
/// that defines its own `sigaction` is left alone. Whether anything changed.
fn watch_signal_handlers(m: LLVMModuleRef) -> bool {
    // Names the C standard reserves (a declaration without a prototype has another type, and is still theirs).
    let sigaction = redirect(m, "sigaction", symbols::SIGACTION, |_| true);
    redirect(m, "signal", symbols::SIGNAL, |_| true) | sigaction
}

/// Trace mode: sends the module's calls of `swapcontext` and `setcontext` to the runtime's
/// (`symbols::SWAPCONTEXT`, `symbols::SETCONTEXT`) and calls `symbols::TRACE_MADE_CONTEXT` with the context
/// right after every call of `makecontext`, so that each user context a coroutine library switches between is
/// traced in a stream of its own (`rt/src/trace/context_streams.rs`). Declarations only, as for the signal
/// functions (`makecontext` through `invoke` is left alone: its context's switches are traced in place).
/// Whether anything changed.
fn trace_user_contexts(m: LLVMModuleRef) -> bool {
    let swaps = redirect(m, "swapcontext", symbols::SWAPCONTEXT, |ty| c_type(ty, Int32, &[Pointer, Pointer], false));
    let sets = redirect(m, "setcontext", symbols::SETCONTEXT, |ty| c_type(ty, Int32, &[Pointer], false));
    let made: Vec<LLVMValueRef> = calls_of_declared(m, &[("makecontext", ())])
        .into_iter()
        .map(|(c, ())| c)
        // SAFETY: live calls.
        .filter(|&c| ir::opcode(c) == LLVMOpcode::LLVMCall && unsafe { LLVMGetNumArgOperands(c) } >= 1)
        .collect();
    if made.is_empty() {
        return swaps | sets;
    }
    // SAFETY: a valid module; every call in `made` is a live `call` (never a terminator) with a first argument.
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let ptr_t = LLVMPointerTypeInContext(ctx, 0);
        let runtime = crate::globals::function_once(m, symbols::TRACE_MADE_CONTEXT, |c| {
            let mut params = [ptr_t];
            let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 1, 0);
            LLVMAddFunction(m, c.as_ptr(), fty)
        });
        LLVMAddAttributeAtIndex(runtime, u32::MAX, LLVMCreateEnumAttribute(ctx, ir::attr_kind("nounwind"), 0));
        let b = LLVMCreateBuilderInContext(ctx);
        for call in made {
            LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(call));
            let mut args = [LLVMGetOperand(call, 0)];
            let c = LLVMBuildCall2(b, LLVMGlobalGetValueType(runtime), runtime, args.as_mut_ptr(), 1, c"".as_ptr());
            let loc = LLVMInstructionGetDebugLoc(call);
            if !loc.is_null() {
                LLVMInstructionSetDebugLoc(c, loc);
            }
        }
        LLVMDisposeBuilder(b);
    }
    true
}

/// Sends every use of the C library function `libc_name`, declared (not defined) in `m`, to the runtime's
/// `ours` (same type). `_Fork` goes to `symbols::FORK_RAW`, which runs the runtime's fork handlers around it,
/// `clone` to `symbols::CLONE`, which does for a child without `CLONE_VM`, and `syscall` to `symbols::SYSCALL`,
/// which does for a `fork`, `clone` or `clone3` system call's child without it (`rt/src/raw_fork.rs`). Only a
/// declaration `is_libc` accepts is the C library's: `clone` is no reserved name, and a program may define a
/// function of its own by that name elsewhere (`Node *clone(Node *)`). Whether anything changed.
fn redirect(m: LLVMModuleRef, libc_name: &str, ours: &str, is_libc: impl Fn(LLVMTypeRef) -> bool) -> bool {
    let (libc_name, ours) = (CString::new(libc_name).unwrap_or_default(), CString::new(ours).unwrap_or_default());
    // SAFETY: a valid module and NUL-terminated names.
    unsafe {
        let f = LLVMGetNamedFunction(m, libc_name.as_ptr());
        if f.is_null() || !ir::is_declaration(f) || LLVMGetFirstUse(f).is_null() || !is_libc(LLVMGlobalGetValueType(f))
        {
            return false;
        }
        let mut g = LLVMGetNamedFunction(m, ours.as_ptr());
        if g.is_null() {
            g = LLVMAddFunction(m, ours.as_ptr(), LLVMGlobalGetValueType(f));
        }
        LLVMReplaceAllUsesWith(f, g);
    }
    true
}

/// The kinds of C types [`c_type`] tells apart: `int`, `long` and any pointer (what `clone` and `syscall` take).
#[derive(Clone, Copy, PartialEq, Eq)]
enum CType {
    Int32,
    Int64,
    Pointer,
}
use CType::{Int32, Int64, Pointer};

/// Whether function type `ty` returns `ret` and takes `params` (and more, when `variadic`).
fn c_type(ty: LLVMTypeRef, ret: CType, params: &[CType], variadic: bool) -> bool {
    let kind = |t: LLVMTypeRef| {
        // SAFETY: a valid type.
        match unsafe { LLVMGetTypeKind(t) } {
            LLVMTypeKind::LLVMIntegerTypeKind if unsafe { LLVMGetIntTypeWidth(t) } == 32 => Some(Int32),
            LLVMTypeKind::LLVMIntegerTypeKind if unsafe { LLVMGetIntTypeWidth(t) } == 64 => Some(Int64),
            LLVMTypeKind::LLVMPointerTypeKind => Some(Pointer),
            _ => None,
        }
    };
    // SAFETY: a valid function type; `types` has room for each of its parameters.
    unsafe {
        if LLVMGetTypeKind(ty) != LLVMTypeKind::LLVMFunctionTypeKind
            || (LLVMIsFunctionVarArg(ty) != 0) != variadic
            || LLVMCountParamTypes(ty) as usize != params.len()
        {
            return false;
        }
        let mut types = vec![std::ptr::null_mut(); params.len()];
        LLVMGetParamTypes(ty, types.as_mut_ptr());
        kind(LLVMGetReturnType(ty)) == Some(ret) && types.iter().zip(params).all(|(&t, &p)| kind(t) == Some(p))
    }
}

/// Definitions we own or that will be discarded are left alone.
fn should_instrument(f: LLVMValueRef) -> bool {
    if ir::is_declaration(f) || ir::fn_has_string_attr(f, INSTRUMENTED_MARK) {
        return false;
    }
    let linkage = unsafe { LLVMGetLinkage(f) };
    if linkage == LLVMLinkage::LLVMAvailableExternallyLinkage {
        return false;
    }
    !ir::name(f).starts_with(OWN_SYMBOL_PREFIX)
}

/// An `indirectbr` listing one block several times (two `&&label`s of one label: oniguruma's matcher) has
/// parallel edges that no run can tell apart and no code can be put on; every mode builds PHIs with one entry
/// per CFG edge. Dropping the repeats — a no-op for the program, which SimplifyCFG does anyway — leaves one
/// edge per target (`cfg_build` numbers a repeat-free terminator's edges the same either way).
fn drop_repeated_indirectbr_destinations(f: LLVMValueRef) -> u32 {
    ir::blocks(f)
        .into_iter()
        .filter_map(ir::terminator)
        .filter(|&term| ir::opcode(term) == inkwell::llvm_sys::LLVMOpcode::LLVMIndirectBr)
        .map(|term| unsafe { crate::shim::pathprof_shim_drop_repeated_destinations(term) })
        .sum()
}
