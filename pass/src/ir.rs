//! Thin, read-mostly views of LLVM IR through the C API (`inkwell::llvm_sys`).
//!
//! Everything unsafe about walking IR lives here, so the rest of the pass reads like ordinary Rust. Values are
//! only valid while the module is alive, which is the duration of one pass invocation.

use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::debuginfo::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use std::ffi::CStr;

/// The function-attribute index of the C API (`LLVMAttributeFunctionIndex`).
const FUNCTION_INDEX: u32 = u32::MAX;

/// Follows an LLVM intrusive list from `first` through `next` to its end (a null handle): one walker for
/// blocks, instructions and functions.
fn walk<T>(first: *mut T, next: unsafe extern "C" fn(*mut T) -> *mut T) -> Vec<*mut T> {
    let mut out = Vec::new();
    let mut item = first;
    while !item.is_null() {
        out.push(item);
        item = unsafe { next(item) };
    }
    out
}

/// The blocks of `f` in IR order.
pub fn blocks(f: LLVMValueRef) -> Vec<LLVMBasicBlockRef> {
    walk(unsafe { LLVMGetFirstBasicBlock(f) }, LLVMGetNextBasicBlock)
}

/// The instructions of `bb` in order.
pub fn instructions(bb: LLVMBasicBlockRef) -> Vec<LLVMValueRef> {
    walk(unsafe { LLVMGetFirstInstruction(bb) }, LLVMGetNextInstruction)
}

/// The defined functions of `m` in module order.
pub fn functions(m: LLVMModuleRef) -> Vec<LLVMValueRef> {
    walk(unsafe { LLVMGetFirstFunction(m) }, LLVMGetNextFunction)
}

/// The global variables of `m` in module order.
pub fn globals(m: LLVMModuleRef) -> Vec<LLVMValueRef> {
    walk(unsafe { LLVMGetFirstGlobal(m) }, LLVMGetNextGlobal)
}

/// The block's terminator, or `None` for a malformed block.
pub fn terminator(bb: LLVMBasicBlockRef) -> Option<LLVMValueRef> {
    let t = unsafe { LLVMGetBasicBlockTerminator(bb) };
    (!t.is_null()).then_some(t)
}

/// The opcode of an instruction.
pub fn opcode(inst: LLVMValueRef) -> LLVMOpcode {
    unsafe { LLVMGetInstructionOpcode(inst) }
}

/// Terminator successors in successor-index order (parallel edges repeated).
pub fn successors(term: LLVMValueRef) -> Vec<LLVMBasicBlockRef> {
    unsafe { (0..LLVMGetNumSuccessors(term)).map(|i| LLVMGetSuccessor(term, i)).collect() }
}

/// A volatile load or store (the only instructions `LLVMGetVolatile` is asked about here).
pub fn is_volatile(memory_access: LLVMValueRef) -> bool {
    unsafe { LLVMGetVolatile(memory_access) != 0 }
}

/// The value's name (empty if unnamed).
pub fn name(v: LLVMValueRef) -> String {
    let mut len = 0usize;
    let p = unsafe { LLVMGetValueName2(v, &mut len) };
    owned_string(p, len)
}

/// A copy of the `len` bytes LLVM returned at `p` (an empty string for null), lossily as UTF-8: names and
/// file names are for display and matching, never for reconstructing bytes.
pub fn owned_string(p: *const std::os::raw::c_char, len: usize) -> String {
    if p.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p as *const u8, len) }).into_owned()
}

/// Whether `f` is a declaration (no body to instrument).
pub fn is_declaration(f: LLVMValueRef) -> bool {
    unsafe { LLVMIsDeclaration(f) != 0 }
}

/// The attribute kind id for an enum attribute name such as `nounwind`.
pub fn attr_kind(name: &str) -> u32 {
    unsafe { LLVMGetEnumAttributeKindForName(name.as_ptr() as *const _, name.len()) }
}

/// Whether the function `f` carries enum attribute `kind` on the function itself.
pub fn fn_has_attr(f: LLVMValueRef, kind: u32) -> bool {
    unsafe { !LLVMGetEnumAttributeAtIndex(f, FUNCTION_INDEX, kind).is_null() }
}

/// Whether the function carries the string attribute `key`.
pub fn fn_has_string_attr(f: LLVMValueRef, key: &str) -> bool {
    unsafe { !LLVMGetStringAttributeAtIndex(f, FUNCTION_INDEX, key.as_ptr() as *const _, key.len() as u32).is_null() }
}

/// Marks `f` with string attribute `key` (used to never instrument a function twice).
pub fn add_string_attr(f: LLVMValueRef, key: &str) {
    unsafe {
        let ctx = LLVMGetTypeContext(LLVMTypeOf(f));
        let a = LLVMCreateStringAttribute(ctx, key.as_ptr() as *const _, key.len() as u32, b"".as_ptr() as *const _, 0);
        LLVMAddAttributeAtIndex(f, FUNCTION_INDEX, a);
    }
}

/// Adds function attribute `name` to a call site (only there: other calls of the callee keep theirs).
pub fn add_call_attr(call: LLVMValueRef, name: &str) {
    unsafe {
        let ctx = LLVMGetModuleContext(LLVMGetGlobalParent(LLVMGetBasicBlockParent(LLVMGetInstructionParent(call))));
        LLVMAddCallSiteAttribute(call, FUNCTION_INDEX, LLVMCreateEnumAttribute(ctx, attr_kind(name), 0));
    }
}

/// Whether the call site carries function attribute `kind`.
pub fn call_has_attr(call: LLVMValueRef, kind: u32) -> bool {
    unsafe { !LLVMGetCallSiteEnumAttribute(call, FUNCTION_INDEX, kind).is_null() }
}

/// What a call or invoke calls, if it is a direct call to a function.
pub fn called_function(call: LLVMValueRef) -> Option<LLVMValueRef> {
    unsafe {
        let v = LLVMGetCalledValue(call);
        if v.is_null() {
            return None;
        }
        let f = LLVMIsAFunction(v);
        (!f.is_null()).then_some(f)
    }
}

/// Whether a call's callee is inline assembly.
pub fn calls_inline_asm(call: LLVMValueRef) -> bool {
    unsafe {
        let v = LLVMGetCalledValue(call);
        !v.is_null() && !LLVMIsAInlineAsm(v).is_null()
    }
}

/// The intrinsic id of `f` (0 for ordinary functions).
pub fn intrinsic_id(f: LLVMValueRef) -> u32 {
    unsafe { LLVMGetIntrinsicID(f) }
}

/// Whether `call` may return a second time (`setjmp` and its kin, `vfork`): marked `returns_twice` at the call
/// or on its callee, or `__builtin_setjmp`'s intrinsic, which LLVM does not mark ([`is_builtin_setjmp`]).
pub fn returns_twice(call: LLVMValueRef) -> bool {
    let kind = attr_kind("returns_twice");
    let callee = called_function(call);
    call_has_attr(call, kind) || callee.is_some_and(|f| fn_has_attr(f, kind) || is_builtin_setjmp(f))
}

/// The direct calls and invokes of `f` in its module (not other uses of it, such as its address taken).
pub fn calls_of(f: LLVMValueRef) -> Vec<LLVMValueRef> {
    let mut calls = Vec::new();
    unsafe {
        let mut u = LLVMGetFirstUse(f);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if matches!(opcode_of_value(user), Some(LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke))
                && LLVMGetCalledValue(user) == f
            {
                calls.push(user);
            }
            u = LLVMGetNextUse(u);
        }
    }
    calls
}

/// Whether intrinsic `f` is lowered to a call of program code: `llvm.coro.resume` and `llvm.coro.destroy`
/// become indirect calls of a coroutine's resume and destroy functions, which may call anything, exit, throw
/// or fork. Every other intrinsic runs no program code.
pub fn intrinsic_runs_program_code(f: LLVMValueRef) -> bool {
    let n = name(f);
    n == "llvm.coro.resume" || n == "llvm.coro.destroy" || n.starts_with("llvm.coro.await.suspend.")
}

/// Whether `call` suspends a C++20 coroutine (`llvm.coro.suspend`, switch lowering).
pub fn is_coro_suspend(call: LLVMValueRef) -> bool {
    called_function(call).is_some_and(|f| name(f) == "llvm.coro.suspend")
}

/// Whether `f` is a coroutine CoroSplit has yet to split.
pub fn is_presplit_coroutine(f: LLVMValueRef) -> bool {
    fn_has_attr(f, attr_kind("presplitcoroutine"))
}

/// Whether coroutine `f` is lowered the way C++'s are (`llvm.coro.id`: a resume and a destroy function that
/// enter at the suspension they left), not as Swift's (`llvm.coro.id.retcon`, `llvm.coro.id.async`).
pub fn is_switch_lowered_coroutine(f: LLVMValueRef) -> bool {
    let ids: Vec<String> = blocks(f)
        .into_iter()
        .flat_map(instructions)
        .filter(|&i| opcode(i) == LLVMOpcode::LLVMCall)
        .filter_map(called_function)
        .map(name)
        .filter(|n| n.starts_with("llvm.coro.id"))
        .collect();
    !ids.is_empty() && ids.iter().all(|n| n == "llvm.coro.id")
}

/// Whether intrinsic `f` is `__builtin_setjmp` (`llvm.eh.sjlj.setjmp`): it returns a second time when
/// `__builtin_longjmp` jumps back, like a `returns_twice` function, though LLVM does not mark it so.
pub fn is_builtin_setjmp(f: LLVMValueRef) -> bool {
    name(f) == "llvm.eh.sjlj.setjmp"
}

/// Whether intrinsic `f` is `__builtin_longjmp` (`llvm.eh.sjlj.longjmp`): it leaves the frame, to a
/// `__builtin_setjmp`.
pub fn is_builtin_longjmp(f: LLVMValueRef) -> bool {
    name(f) == "llvm.eh.sjlj.longjmp"
}

/// Whether a call of intrinsic `f` is a call site for the modes that follow calls: it runs program code
/// ([`intrinsic_runs_program_code`]) or jumps like `setjmp`/`longjmp`.
pub fn intrinsic_is_call_site(f: LLVMValueRef) -> bool {
    intrinsic_runs_program_code(f) || is_builtin_setjmp(f) || is_builtin_longjmp(f)
}

/// Whether some activation of `f` may end in a `musttail` call (another function's activation then returns
/// to `f`'s caller in its place).
pub fn has_musttail_call(f: LLVMValueRef) -> bool {
    blocks(f).into_iter().flat_map(instructions).any(|i| opcode(i) == LLVMOpcode::LLVMCall && is_musttail(i))
}

/// Whether a `call` is `musttail` (must stay immediately before its `ret`).
pub fn is_musttail(call: LLVMValueRef) -> bool {
    unsafe { LLVMGetTailCallKind(call) == inkwell::llvm_sys::LLVMTailCallKind::LLVMTailCallKindMustTail }
}

/// The source line of an instruction's debug location (0 if none).
pub fn debug_line(inst: LLVMValueRef) -> u32 {
    unsafe {
        let loc = LLVMInstructionGetDebugLoc(inst);
        if loc.is_null() {
            return 0;
        }
        LLVMDILocationGetLine(loc)
    }
}

/// File name and declaration line of a function from its DISubprogram (`("", 0)` without debug info).
pub fn subprogram_file_line(f: LLVMValueRef) -> (String, u32) {
    // SAFETY: a valid function; its subprogram is checked for null first.
    let line = unsafe {
        let sp = LLVMGetSubprogram(f);
        if sp.is_null() {
            return (String::new(), 0);
        }
        LLVMDISubprogramGetLine(sp)
    };
    // SAFETY: a DIFile of the function's subprogram.
    let name = subprogram_file(f).map_or_else(String::new, |file| unsafe {
        let mut len = 0u32;
        let p = LLVMDIFileGetFilename(file, &mut len);
        owned_string(p, len as usize)
    });
    (name, line)
}

/// The directory a function's DISubprogram's file name is relative to (its DIFile's directory: the directory
/// its translation unit was compiled in), empty without debug info.
pub fn subprogram_directory(f: LLVMValueRef) -> String {
    // SAFETY: a DIFile of the function's subprogram.
    subprogram_file(f).map_or_else(String::new, |file| unsafe {
        let mut len = 0u32;
        let p = LLVMDIFileGetDirectory(file, &mut len);
        owned_string(p, len as usize)
    })
}

/// The DIFile of a function's DISubprogram, if it has both.
fn subprogram_file(f: LLVMValueRef) -> Option<LLVMMetadataRef> {
    // SAFETY: a valid function; null debug-info handles are checked.
    unsafe {
        let sp = LLVMGetSubprogram(f);
        let file = if sp.is_null() { std::ptr::null_mut() } else { LLVMDIScopeGetFile(sp) };
        (!file.is_null()).then_some(file)
    }
}

/// The module's source file name (`source_filename`), used as the module's name in profiles.
pub fn module_source_name(m: LLVMModuleRef) -> String {
    let mut len = 0usize;
    let p = unsafe { LLVMGetSourceFileName(m, &mut len) };
    owned_string(p, len)
}

/// Whether the module has named metadata `name` (our "already instrumented" marker).
pub fn has_named_metadata(m: LLVMModuleRef, name: &str) -> bool {
    unsafe { !LLVMGetNamedMetadata(m, name.as_ptr() as *const _, name.len()).is_null() }
}

/// Adds named metadata `name` with an empty string operand.
pub fn add_named_metadata(m: LLVMModuleRef, name: &str) {
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let s = LLVMMDStringInContext2(ctx, b"1".as_ptr() as *const _, 1);
        let node = LLVMMDNodeInContext2(ctx, [s].as_mut_ptr(), 1);
        let c = std::ffi::CString::new(name).expect("metadata name has no NUL");
        LLVMAddNamedMetadataOperand(m, c.as_ptr(), LLVMMetadataAsValue(ctx, node));
    }
}

/// Whether an instruction is a PHI or a landing pad (both must stay at the top of their block).
pub fn is_block_header_inst(inst: LLVMValueRef) -> bool {
    matches!(opcode(inst), LLVMOpcode::LLVMPHI | LLVMOpcode::LLVMLandingPad)
}

/// The first instruction of `bb` before which new code may go (after PHIs and a landing pad).
pub fn first_insertion_point(bb: LLVMBasicBlockRef) -> Option<LLVMValueRef> {
    instructions(bb).into_iter().find(|&i| !is_block_header_inst(i))
}

/// Where code that must run first in a function goes: after the entry block's static allocas, which are
/// moved to its top first. Code with branches put before an alloca splits the entry block, and an alloca left
/// outside the entry block is a dynamic one: the frame grows at run time and SROA leaves the variable in memory.
pub fn entry_insertion_point(f: LLVMValueRef) -> LLVMValueRef {
    unsafe {
        let entry = LLVMGetEntryBasicBlock(f);
        let is_static_alloca = |i: LLVMValueRef| {
            opcode(i) == LLVMOpcode::LLVMAlloca && !LLVMIsAConstantInt(LLVMGetOperand(i, 0)).is_null()
        };
        let insts = instructions(entry);
        let Some(&first) = insts.iter().find(|&&i| !is_static_alloca(i)) else {
            unreachable!("a block ends with its terminator, no alloca")
        };
        let late: Vec<LLVMValueRef> =
            insts.iter().copied().skip_while(|&i| i != first).filter(|&i| is_static_alloca(i)).collect();
        if !late.is_empty() {
            let b = LLVMCreateBuilderInContext(LLVMGetModuleContext(LLVMGetGlobalParent(f)));
            LLVMPositionBuilderBefore(b, first);
            for alloca in late {
                LLVMInstructionRemoveFromParent(alloca);
                LLVMInsertIntoBuilder(b, alloca);
            }
            LLVMDisposeBuilder(b);
        }
        first
    }
}

/// Name of an LLVM C string (for diagnostics).
pub fn c_str(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Where code that belongs at the end of `bb` goes: before the terminator, or before a `musttail` call (and
/// the optional bitcast) that must stay immediately before its `ret`.
pub fn source_end_insertion_point(bb: LLVMBasicBlockRef) -> Option<LLVMValueRef> {
    let term = terminator(bb)?;
    if opcode(term) != LLVMOpcode::LLVMRet {
        return Some(term);
    }
    let mut at = term;
    let mut prev = unsafe { LLVMGetPreviousInstruction(at) };
    if !prev.is_null() && opcode(prev) == LLVMOpcode::LLVMBitCast {
        at = prev;
        prev = unsafe { LLVMGetPreviousInstruction(at) };
    }
    if !prev.is_null() && opcode(prev) == LLVMOpcode::LLVMCall && is_musttail(prev) {
        return Some(prev);
    }
    Some(term)
}

/// Whether the definition of `f` in this module is the one that runs (or an equivalent one, for ODR
/// linkage): LLVM's `!isInterposable()`, the same criterion its inliner and attribute inference use.
pub fn definition_is_final(f: LLVMValueRef) -> bool {
    unsafe { crate::shim::pathprof_shim_is_interposable(f) == 0 }
}

/// Whether a call of `f` surely runs this module's definition of it, with this module's instrumentation:
/// local linkage, or a strong external definition that resolves within the linkage unit (`dso_local`). An
/// ODR-linkage definition (inline function, template instance) is equivalent in behaviour but not in
/// instrumentation — the linker keeps one module's copy — and an interposable one may be replaced outright.
pub fn runs_own_definition(f: LLVMValueRef) -> bool {
    unsafe { crate::shim::pathprof_shim_runs_own_definition(f) != 0 }
}

/// Attributes that promise a function touches no memory beyond what it says (`memory(…)`), never synchronises
/// through memory (`nosync`: volatile counter updates do), or may be executed speculatively. Instrumented code
/// reads and writes counters, tables, caches and the interprocedural handoff, so these promises no longer
/// hold; left in place (the whole-program link sees them inferred by the pre-link pipeline), the optimiser
/// moves a caller's handoff stores and loads across the call or keeps a shared cache slot in a register.
const MEMORY_PROMISES: [&str; 6] = ["memory", "readnone", "readonly", "writeonly", "nosync", "speculatable"];

/// Marks `f` instrumented (the string attribute `mark`, so no later run instruments it again) and withdraws
/// its memory promises ([`MEMORY_PROMISES`]) from its definition and from every call of it.
pub fn mark_instrumented(f: LLVMValueRef, mark: &str) {
    add_string_attr(f, mark);
    let kinds: Vec<u32> = MEMORY_PROMISES.iter().map(|n| attr_kind(n)).filter(|&k| k != 0).collect();
    unsafe {
        for &k in &kinds {
            LLVMRemoveEnumAttributeAtIndex(f, FUNCTION_INDEX, k);
        }
        for call in calls_of(f) {
            for &k in &kinds {
                LLVMRemoveCallSiteEnumAttribute(call, FUNCTION_INDEX, k);
            }
        }
    }
}

/// Whether `call` or the function it calls promises to read at most (`memory(...)`, `readnone`, `readonly`):
/// the optimiser may then merge or drop the call.
pub fn has_memory_promise(call: LLVMValueRef) -> bool {
    let kinds: Vec<u32> = ["memory", "readnone", "readonly"].iter().map(|n| attr_kind(n)).filter(|&k| k != 0).collect();
    unsafe {
        kinds.iter().any(|&k| {
            !LLVMGetCallSiteEnumAttribute(call, FUNCTION_INDEX, k).is_null()
                || called_function(call).is_some_and(|f| !LLVMGetEnumAttributeAtIndex(f, FUNCTION_INDEX, k).is_null())
        })
    }
}

/// Withdraws the memory promises ([`MEMORY_PROMISES`]) from `call` and from the declaration or definition it
/// calls. Trace mode: a callee in another module is instrumented there and writes the thread's trace state,
/// which the caller reads and writes around the call; a `pure` declaration (`memory(read)`) would let the
/// optimiser keep the caller's bit accumulator in a register across the call and overwrite the callee's bits.
pub fn withdraw_memory_promises(call: LLVMValueRef) {
    let kinds: Vec<u32> = MEMORY_PROMISES.iter().map(|n| attr_kind(n)).filter(|&k| k != 0).collect();
    unsafe {
        for &k in &kinds {
            LLVMRemoveCallSiteEnumAttribute(call, FUNCTION_INDEX, k);
        }
        if let Some(f) = called_function(call) {
            for &k in &kinds {
                LLVMRemoveEnumAttributeAtIndex(f, FUNCTION_INDEX, k);
            }
        }
    }
}

/// The opcode of `v` if it is an instruction.
fn opcode_of_value(v: LLVMValueRef) -> Option<LLVMOpcode> {
    unsafe { (!LLVMIsAInstruction(v).is_null()).then(|| LLVMGetInstructionOpcode(v)) }
}

/// Whether `m` targets an ELF platform (its triple names none of the others), where section names such as
/// `.text.startup` mean what the linker scripts make of them.
fn is_elf(m: LLVMModuleRef) -> bool {
    let triple = unsafe { CStr::from_ptr(LLVMGetTarget(m)) }.to_string_lossy().to_ascii_lowercase();
    !triple.is_empty()
        && !["apple", "darwin", "macos", "ios", "windows", "win32", "cygwin", "mingw", "aix", "zos"]
            .iter()
            .any(|os| triple.contains(os))
}

/// Puts a function the pass defines for its own use (a shared slow path, a thunk) into `.text.unlikely.pathprof`,
/// which linkers group apart from the program's functions (with the other cold code), so that every function
/// of the program keeps the plain build's neighbour. An optimiser that proves a function's end unreachable
/// (undefined behaviour) leaves it without a return, and a call of it runs on into the next function: the
/// plain build's, not a helper of pathprof's given arguments it never passed (cmocka's test of a null-pointer
/// store hung in trace mode, running on into an entry helper).
pub fn place_apart(m: LLVMModuleRef, f: LLVMValueRef) {
    set_elf_section(m, f, c".text.unlikely.pathprof");
}

/// Puts function `f` of `m` into `section` on ELF targets (elsewhere the name would mean nothing to the linker).
pub fn set_elf_section(m: LLVMModuleRef, f: LLVMValueRef, section: &CStr) {
    if is_elf(m) {
        unsafe { LLVMSetSection(f, section.as_ptr()) };
    }
}
