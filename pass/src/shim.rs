//! Declarations of the C++ shim's functions (pass/shim/shim.cpp): LLVM analyses and utilities the C API lacks.

use inkwell::llvm_sys::prelude::*;
use std::os::raw::{c_char, c_void};

extern "C" {
    /// Edge frequencies (BFI × BPI) for every block and successor, in IR and successor order.
    pub fn pathprof_shim_edge_freqs(fam: *mut c_void, f: LLVMValueRef, out: *mut u64, cap: usize) -> usize;
    /// Block frequencies (BFI) in IR order.
    pub fn pathprof_shim_block_freqs(fam: *mut c_void, f: LLVMValueRef, out: *mut u64, cap: usize) -> usize;
    /// The DISubprogram name of a function (null without debug info).
    pub fn pathprof_shim_subprogram_name(f: LLVMValueRef, len: *mut usize) -> *const c_char;
    /// Reports an error through the compiler's diagnostics.
    pub fn pathprof_shim_emit_error(m: LLVMModuleRef, msg: *const c_char);
    /// Drops an `indirectbr`'s repeated destinations (first occurrences kept, in order); returns how many.
    pub fn pathprof_shim_drop_repeated_destinations(term: LLVMValueRef) -> u32;
    /// Turns `allocas` (of one function, used only by plain loads and stores) into SSA values: LLVM's mem2reg.
    pub fn pathprof_shim_promote_to_registers(allocas: *mut LLVMValueRef, n: usize);
    /// Splits a critical edge with LLVM's `SplitCriticalEdge`.
    pub fn pathprof_shim_split_edge(term: LLVMValueRef, succ: u32) -> LLVMBasicBlockRef;
    /// Splits the block of `inst` right after it; returns the new block.
    pub fn pathprof_shim_split_after(inst: LLVMValueRef) -> LLVMBasicBlockRef;
    /// Splits before `before` and returns the terminator of a block that runs only when `cond` is true.
    pub fn pathprof_shim_if_then(cond: LLVMValueRef, before: LLVMValueRef) -> LLVMValueRef;
    /// Splits before `before` into `if (cond) then else else`, both falling through to `before`; writes the
    /// terminators of the two new blocks.
    pub fn pathprof_shim_if_then_else(
        cond: LLVMValueRef,
        before: LLVMValueRef,
        then_term: *mut LLVMValueRef,
        else_term: *mut LLVMValueRef,
    );
    /// `GlobalValue::setDSOLocal(true)`.
    pub fn pathprof_shim_set_dso_local(gv: LLVMValueRef);
    /// [`pathprof_shim_if_then`] with "unlikely" branch weights on the guard.
    pub fn pathprof_shim_if_then_cold(cond: LLVMValueRef, before: LLVMValueRef) -> LLVMValueRef;
    /// `sizeof(llvm::PassPluginLibraryInfo)`, to check the Rust mirror.
    pub fn pathprof_shim_plugin_info_size() -> usize;
    /// Registers the pass with clang's / opt's PassBuilder.
    pub fn pathprof_shim_register_callbacks(pb: *mut c_void);
}

/// Calls a shim function that fills a caller-sized buffer and returns the size it needs.
pub fn fill_u64s(call: impl Fn(*mut u64, usize) -> usize) -> Vec<u64> {
    let need = call(std::ptr::null_mut(), 0);
    let mut v = vec![0u64; need];
    let got = call(v.as_mut_ptr(), v.len());
    v.truncate(got.min(need));
    v
}

/// The source-level name of `f`, if it has debug info.
pub fn subprogram_name(f: LLVMValueRef) -> String {
    let mut len = 0usize;
    let p = unsafe { pathprof_shim_subprogram_name(f, &mut len) };
    if p.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p as *const u8, len) }).into_owned()
}

extern "C" {
    /// Starts a ProfileSummary builder.
    pub fn pathprof_shim_summary_new() -> *mut c_void;
    /// Adds one function: `counts[0]` is its entry count, the rest its block counts.
    pub fn pathprof_shim_summary_add(b: *mut c_void, counts: *const u64, n: usize);
    /// Attaches the summary to `m` (if non-null) and frees the builder.
    pub fn pathprof_shim_summary_finish(b: *mut c_void, m: LLVMModuleRef);
}

extern "C" {
    /// `GlobalValue::isInterposable()`.
    pub fn pathprof_shim_is_interposable(gv: LLVMValueRef) -> std::os::raw::c_int;
    pub fn pathprof_shim_runs_own_definition(gv: LLVMValueRef) -> std::os::raw::c_int;
    /// A copy of function `f` in its module: internal, named `name`, with its own debug-info subprogram.
    pub fn pathprof_shim_clone_function(f: LLVMValueRef, name: *const c_char) -> LLVMValueRef;
    /// Mode icache: the blocks instruction selection will number for `f`, each `f`'s block or null for one
    /// codegen's IR passes add; -1 when no prediction can be made (see shim.cpp).
    pub fn pathprof_shim_predict_isel_blocks(
        f: LLVMValueRef,
        fam: *mut c_void,
        out: *mut LLVMBasicBlockRef,
        cap: usize,
    ) -> std::os::raw::c_long;
}

extern "C" {
    /// What a call promises: bit 0 only reads memory, bit 1 touches none, bit 2 `willreturn`, bit 3 `noreturn`.
    pub fn pathprof_shim_call_effects(call: LLVMValueRef) -> std::os::raw::c_int;
    /// The source variable a `dbg.declare` places at this alloca (null if none).
    pub fn pathprof_shim_declared_variable(alloca: LLVMValueRef, len: *mut usize) -> *const c_char;
}

/// The source-level name of the variable living at `alloca` (from `-g`'s `dbg.declare`), if any.
pub fn declared_variable(alloca: LLVMValueRef) -> Option<String> {
    let mut len = 0usize;
    let p = unsafe { pathprof_shim_declared_variable(alloca, &mut len) };
    (!p.is_null())
        .then(|| String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p as *const u8, len) }).into_owned())
}
