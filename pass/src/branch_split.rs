//! Mode icache: splits each conditional branch on a logical `and`/`or` tree the way instruction selection will
//! split it in the plain build, so the traced IR has a block for every machine block codegen makes of it.
//!
//! Why: SelectionDAG lowers `br (or a, b), T, F` (also `and`, and `select i1 a, true, b` / `select i1 a, b,
//! false`) into `br a, T, Tmp; Tmp: br b, T, F` (`SelectionDAGBuilder::FindMergedConditions`, left operand
//! first, `Tmp` a new machine block). The IR edge to `T` then does not tell whether `Tmp` ran, and the
//! instruction fetches differ: the mapping onto machine blocks must refuse the function. With the same split in
//! the traced IR, the trace says which leaf decided, and the new IR blocks map onto the new machine blocks.
//!
//! The new blocks are appended at the end of the function in the order instruction selection creates its
//! blocks (reverse post-order of the parents, each tree's temporaries before its left operand's), so their
//! numbers follow the order of the machine ids codegen gives them (after every block made from IR). Where
//! codegen keeps the conditions together after all (its cost heuristics, two compares of the same values),
//! the new blocks have no code of their own: the mapping treats them as absent. What the mapping cannot see is
//! the order the conditions are tested in (both orders give the same shape): that it is left to right is
//! `FindMergedConditions`'s contract, which this module mirrors; trees with a negation (`xor x, true`, which
//! codegen folds by De Morgan) are left alone.
//!
//! Functions codegen selects with FastISel (`optnone`, -O0) are left alone: CodeGenPrepare splits those in IR,
//! inserting the blocks next to the parent (the mapping's alignment handles that shift itself).

use crate::ir;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::debuginfo::{LLVMInstructionGetDebugLoc, LLVMInstructionSetDebugLoc};
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use std::collections::HashSet;

/// `and` or `or` of a tree.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Logic {
    And,
    Or,
}

/// The tree's operation and operands when `v` is a scalar `i1` logical and/or (`PatternMatch::m_LogicalAnd`,
/// `m_LogicalOr`).
fn logical(v: LLVMValueRef) -> Option<(Logic, LLVMValueRef, LLVMValueRef)> {
    unsafe {
        if LLVMIsAInstruction(v).is_null() || !is_i1(v) {
            return None;
        }
        let op = |i| LLVMGetOperand(v, i);
        match ir::opcode(v) {
            LLVMOpcode::LLVMAnd => Some((Logic::And, op(0), op(1))),
            LLVMOpcode::LLVMOr => Some((Logic::Or, op(0), op(1))),
            LLVMOpcode::LLVMSelect if is_i1(op(0)) => match (const_bool(op(1)), const_bool(op(2))) {
                (Some(true), _) => Some((Logic::Or, op(0), op(2))),
                (_, Some(false)) => Some((Logic::And, op(0), op(1))),
                _ => None,
            },
            _ => None,
        }
    }
}

fn is_i1(v: LLVMValueRef) -> bool {
    unsafe {
        let t = LLVMTypeOf(v);
        LLVMGetTypeKind(t) == inkwell::llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 1
    }
}

fn const_bool(v: LLVMValueRef) -> Option<bool> {
    unsafe { (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetZExtValue(v) != 0) }
}

fn one_use(v: LLVMValueRef) -> bool {
    unsafe {
        let u = LLVMGetFirstUse(v);
        !u.is_null() && LLVMGetNextUse(u).is_null()
    }
}

/// `FindMergedConditions`'s `InBlock`: an instruction of `bb`, or not an instruction.
fn in_block(v: LLVMValueRef, bb: LLVMBasicBlockRef) -> bool {
    unsafe { LLVMIsAInstruction(v).is_null() || LLVMGetInstructionParent(v) == bb }
}

/// An inner node of the tree rooted in `bb` with operation `op`: split further.
fn inner(v: LLVMValueRef, op: Logic, bb: LLVMBasicBlockRef) -> Option<(LLVMValueRef, LLVMValueRef)> {
    let (o, a, b) = logical(v)?;
    (o == op && one_use(v) && in_block(v, bb) && in_block(a, bb) && in_block(b, bb)).then_some((a, b))
}

/// A negation codegen would look through (and then switch `and`/`or`): `xor` with a constant. Such trees are
/// not mirrored.
fn negation(v: LLVMValueRef) -> bool {
    unsafe {
        !LLVMIsAInstruction(v).is_null()
            && ir::opcode(v) == LLVMOpcode::LLVMXor
            && (0..2).any(|i| !LLVMIsAConstant(LLVMGetOperand(v, i)).is_null())
    }
}

/// Whether the tree below `v` has a negation anywhere codegen looks.
fn has_negation(v: LLVMValueRef, op: Logic, bb: LLVMBasicBlockRef) -> bool {
    if negation(v) {
        return true;
    }
    match inner(v, op, bb) {
        Some((a, b)) => has_negation(a, op, bb) || has_negation(b, op, bb),
        None => false,
    }
}

/// One conditional branch to emit: in `block`, on `cond`, to `then` / `otherwise`.
struct Leaf {
    block: LLVMBasicBlockRef,
    cond: LLVMValueRef,
    then: LLVMBasicBlockRef,
    otherwise: LLVMBasicBlockRef,
}

/// Mirrors `FindMergedConditions`: the temporary block is created before the left operand is visited.
fn lower(
    f: LLVMValueRef,
    v: LLVMValueRef,
    op: Logic,
    (then, otherwise, cur, root): (LLVMBasicBlockRef, LLVMBasicBlockRef, LLVMBasicBlockRef, LLVMBasicBlockRef),
    leaves: &mut Vec<Leaf>,
) {
    let Some((a, b)) = inner(v, op, root) else {
        leaves.push(Leaf { block: cur, cond: v, then, otherwise });
        return;
    };
    let tmp = unsafe { LLVMAppendBasicBlockInContext(LLVMGetModuleContext(LLVMGetGlobalParent(f)), f, c"".as_ptr()) };
    match op {
        Logic::Or => {
            lower(f, a, op, (then, tmp, cur, root), leaves);
            lower(f, b, op, (then, otherwise, tmp, root), leaves);
        }
        Logic::And => {
            lower(f, a, op, (tmp, otherwise, cur, root), leaves);
            lower(f, b, op, (then, otherwise, tmp, root), leaves);
        }
    }
}

/// Blocks of `f` in reverse post-order (successors in terminator order: `ReversePostOrderTraversal`'s).
fn reverse_post_order(f: LLVMValueRef) -> Vec<LLVMBasicBlockRef> {
    let Some(&entry) = ir::blocks(f).first() else { return Vec::new() };
    let succs = |bb| ir::terminator(bb).map(ir::successors).unwrap_or_default();
    let mut seen = HashSet::from([entry]);
    let mut post = Vec::new();
    let mut stack = vec![(entry, succs(entry), 0usize)];
    while let Some((bb, ss, i)) = stack.last_mut() {
        if let Some(&s) = ss.get(*i) {
            *i += 1;
            if seen.insert(s) {
                let next = succs(s);
                stack.push((s, next, 0));
            }
        } else {
            post.push(*bb);
            stack.pop();
        }
    }
    post.reverse();
    post
}

/// Redirects `succ`'s phis: the value they took from `old` now comes from each of `preds`.
fn retarget_phis(succ: LLVMBasicBlockRef, old: LLVMBasicBlockRef, preds: &[LLVMBasicBlockRef], b: LLVMBuilderRef) {
    for phi in ir::instructions(succ) {
        if ir::opcode(phi) != LLVMOpcode::LLVMPHI {
            break;
        }
        unsafe {
            let mut values = Vec::new();
            let mut blocks = Vec::new();
            for i in 0..LLVMCountIncoming(phi) {
                let (v, from) = (LLVMGetIncomingValue(phi, i), LLVMGetIncomingBlock(phi, i));
                if from == old {
                    for &p in preds {
                        values.push(v);
                        blocks.push(p);
                    }
                } else {
                    values.push(v);
                    blocks.push(from);
                }
            }
            LLVMPositionBuilderBefore(b, phi);
            let new = LLVMBuildPhi(b, LLVMTypeOf(phi), c"".as_ptr());
            LLVMAddIncoming(new, values.as_mut_ptr(), blocks.as_mut_ptr(), values.len() as u32);
            LLVMReplaceAllUsesWith(phi, new);
            LLVMInstructionEraseFromParent(phi);
        }
    }
}

/// Splits the and/or branches of `f` (see the module documentation); returns how many blocks were added.
pub fn split_merged_conditions(f: LLVMValueRef) -> usize {
    if ir::fn_has_attr(f, ir::attr_kind("optnone")) {
        return 0;
    }
    let unpredictable = unsafe { LLVMGetMDKindID(c"unpredictable".as_ptr(), 13) };
    let mut added = 0;
    let builder = unsafe { LLVMCreateBuilderInContext(LLVMGetModuleContext(LLVMGetGlobalParent(f))) };
    for bb in reverse_post_order(f) {
        let Some(br) = ir::terminator(bb) else { continue };
        unsafe {
            if ir::opcode(br) != LLVMOpcode::LLVMBr || LLVMIsConditional(br) == 0 {
                continue;
            }
            if !LLVMGetMetadata(br, unpredictable).is_null() {
                continue;
            }
            let cond = LLVMGetCondition(br);
            let (then, otherwise) = (LLVMGetSuccessor(br, 0), LLVMGetSuccessor(br, 1));
            let Some((op, _, _)) = logical(cond) else { continue };
            if then == otherwise || inner(cond, op, bb).is_none() || has_negation(cond, op, bb) {
                continue;
            }
            let mut leaves = Vec::new();
            lower(f, cond, op, (then, otherwise, bb, bb), &mut leaves);
            added += leaves.len() - 1;
            let loc = LLVMInstructionGetDebugLoc(br);
            LLVMInstructionEraseFromParent(br);
            for l in &leaves {
                LLVMPositionBuilderAtEnd(builder, l.block);
                let new = LLVMBuildCondBr(builder, l.cond, l.then, l.otherwise);
                if !loc.is_null() {
                    LLVMInstructionSetDebugLoc(new, loc);
                }
            }
            for succ in [then, otherwise] {
                let preds: Vec<_> =
                    leaves.iter().filter(|l| l.then == succ || l.otherwise == succ).map(|l| l.block).collect();
                retarget_phis(succ, bb, &preds, builder);
            }
        }
    }
    unsafe { LLVMDisposeBuilder(builder) };
    added
}
