//! Declares the registers an x86-64 `syscall` in inline assembly overwrites, where the assembly forgot them.
//!
//! The `syscall` instruction writes the return address to `rcx` and the flags to `r11`. Assembly that does not
//! list them as clobbered (LZO 2.10's `lzo_pclock_syscall_clock_gettime`: `"syscall" : "=a"(r), "=m"(*ts) :
//! "0"(r), "D"(id), "S"(ts) : "cc"`) works in the plain build only because nothing of the program's happens to be
//! held in those registers across it — typically the assembly sits alone in a `noinline` function. Instrumentation
//! adds values that live across it (context mode's path number read at entry and used at the return, a promoted
//! counter in a loop), and the register allocator may put them in `rcx` or `r11`: the counts came out as code
//! addresses, and a small test program crashed. Declaring what the instruction really does changes no program's
//! behaviour — it only tells the register allocator the truth — so every module the pass instruments gets it.

use crate::ir;
use inkwell::llvm_sys::core::{
    LLVMGetCalledValue, LLVMGetInlineAsm, LLVMGetInlineAsmAsmString, LLVMGetInlineAsmCanUnwind,
    LLVMGetInlineAsmConstraintString, LLVMGetInlineAsmDialect, LLVMGetInlineAsmFunctionType,
    LLVMGetInlineAsmHasSideEffects, LLVMGetInlineAsmNeedsAlignedStack, LLVMGetNumOperands, LLVMGetTarget,
    LLVMIsACallInst, LLVMIsAInlineAsm, LLVMSetOperand,
};
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use std::ffi::CStr;

/// The registers `syscall` overwrites besides its result, as LLVM names them in a clobber (`~{rcx}`), each with
/// the names of its parts an operand constraint may pin (`{cx}` is what clang writes for `"c"`).
const SYSCALL_WRITES: [(&str, &[&str]); 2] =
    [("rcx", &["rcx", "ecx", "cx", "cl", "ch"]), ("r11", &["r11", "r11d", "r11w", "r11b"])];

/// Gives every inline `syscall` of `m`'s functions the clobbers it lacks, on x86-64 targets. Whether anything
/// changed.
pub fn declare_syscall_clobbers(m: LLVMModuleRef) -> bool {
    // SAFETY: a valid module.
    let triple = unsafe { CStr::from_ptr(LLVMGetTarget(m)) }.to_string_lossy().to_ascii_lowercase();
    if !triple.starts_with("x86_64") {
        return false;
    }
    let mut changed = false;
    for f in ir::functions(m) {
        for bb in ir::blocks(f) {
            for inst in ir::instructions(bb) {
                if ir::opcode(inst) == LLVMOpcode::LLVMCall && ir::calls_inline_asm(inst) {
                    changed |= mend_call(inst);
                }
            }
        }
    }
    changed
}

/// Replaces the inline assembly `call` runs with one that declares the missing clobbers, if any are missing.
fn mend_call(call: LLVMValueRef) -> bool {
    // SAFETY: `call` is a live call instruction whose callee is inline assembly; the new assembly has the same
    // function type, so it is a valid callee for the same call (the callee is a call's last operand).
    unsafe {
        if LLVMIsACallInst(call).is_null() {
            return false;
        }
        let asm = LLVMIsAInlineAsm(LLVMGetCalledValue(call));
        if asm.is_null() {
            return false;
        }
        let (mut text_len, mut constraints_len) = (0usize, 0usize);
        let text = LLVMGetInlineAsmAsmString(asm, &mut text_len);
        let constraints = LLVMGetInlineAsmConstraintString(asm, &mut constraints_len);
        let text = ir::owned_string(text, text_len);
        let constraints = ir::owned_string(constraints, constraints_len);
        let Some(mended) = mended_constraints(&text, &constraints) else {
            return false;
        };
        let replacement = LLVMGetInlineAsm(
            LLVMGetInlineAsmFunctionType(asm),
            text.as_ptr().cast(),
            text.len(),
            mended.as_ptr().cast(),
            mended.len(),
            LLVMGetInlineAsmHasSideEffects(asm),
            LLVMGetInlineAsmNeedsAlignedStack(asm),
            LLVMGetInlineAsmDialect(asm),
            LLVMGetInlineAsmCanUnwind(asm),
        );
        let callee = u32::try_from(LLVMGetNumOperands(call) - 1).unwrap_or(0);
        LLVMSetOperand(call, callee, replacement);
    }
    true
}

/// The constraint string with the clobbers a `syscall` in `text` needs and `constraints` lacks, or `None` when
/// nothing is missing (no `syscall`, or every register it writes already clobbered or named by an operand — an
/// operand pinned to `rcx` is the program's choice, which a clobber would contradict).
pub fn mended_constraints(text: &str, constraints: &str) -> Option<String> {
    if !has_syscall(text) {
        return None;
    }
    let named: Vec<String> = constraints
        .split(',')
        .filter_map(|c| Some(c.split_once('{')?.1.rsplit_once('}')?.0.to_ascii_lowercase()))
        .collect();
    let missing: Vec<&str> = SYSCALL_WRITES
        .iter()
        .filter(|(_, parts)| !named.iter().any(|n| parts.contains(&n.as_str())))
        .map(|(clobber, _)| *clobber)
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut mended = constraints.to_string();
    for clobber in missing {
        if !mended.is_empty() {
            mended.push(',');
        }
        mended.push_str(&format!("~{{{clobber}}}"));
    }
    Some(mended)
}

/// Whether one of the assembly's statements is a `syscall` instruction (statements end at a newline or `;`; a
/// statement may start with labels).
fn has_syscall(text: &str) -> bool {
    text.split(['\n', ';']).any(|statement| {
        let mut rest = statement.trim();
        while let Some((label, after)) = rest.split_once(':') {
            if label.is_empty() || !label.chars().all(|c| c.is_ascii_alphanumeric() || "_.$".contains(c)) {
                break;
            }
            rest = after.trim_start();
        }
        rest.split_whitespace().next().is_some_and(|mnemonic| mnemonic.eq_ignore_ascii_case("syscall"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// LZO 2.10's raw `clock_gettime`, as clang lowers its constraints: both registers are missing.
    #[test]
    fn lzo_clock_gettime_gets_rcx_and_r11() {
        let constraints = "={ax},=*m,0,{di},{si},~{cc},~{dirflag},~{fpsr},~{flags}";
        assert_eq!(
            mended_constraints("syscall\n", constraints).as_deref(),
            Some("={ax},=*m,0,{di},{si},~{cc},~{dirflag},~{fpsr},~{flags},~{rcx},~{r11}")
        );
    }

    /// What a careful program writes (glibc's INTERNAL_SYSCALL: `"memory", "rcx", "r11"`) is left alone, and so is
    /// assembly with no `syscall` instruction, however it names one in a comment or a symbol.
    #[test]
    fn declared_or_absent_syscalls_are_left_alone() {
        let declared = "={ax},0,{di},~{memory},~{rcx},~{r11},~{dirflag},~{fpsr},~{flags}";
        assert_eq!(mended_constraints("syscall", declared), None);
        assert_eq!(mended_constraints("call my_syscall_wrapper", "~{dirflag}"), None);
        assert_eq!(mended_constraints("nop # not a syscall here", "~{dirflag}"), None);
        assert_eq!(mended_constraints("", ""), None);
    }

    /// Statements after a newline, a `;` or a label are found; an operand already in `ecx` keeps the program's
    /// choice, and only the register not named by anything is added.
    #[test]
    fn syscall_after_labels_and_separators_with_partly_named_registers() {
        assert_eq!(mended_constraints("mov $$60, %eax; 1: SYSCALL", "{di}").as_deref(), Some("{di},~{rcx},~{r11}"));
        assert_eq!(mended_constraints("xor %eax,%eax\n\tsyscall", "={ax},{cx}").as_deref(), Some("={ax},{cx},~{r11}"));
        assert_eq!(mended_constraints("syscall", "={r11d},~{rcx}"), None);
        assert_eq!(mended_constraints("syscall", "").as_deref(), Some("~{rcx},~{r11}"));
    }
}
