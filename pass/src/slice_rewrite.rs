//! Turns a function into its executable slice: deletes every instruction outside the [`Slice`] and repairs the
//! CFG with the slice's successors (`pathprof_core::slicing::Slice::successor`: the nearest kept postdominator
//! per label, thesis §6.1.2). Checked before any change ([`plan`]): a repaired successor is always the first kept
//! instruction of its block, EXIT, or the next kept instruction of the same block, and every operand of a kept
//! instruction is kept; then [`apply`] edits the IR: kept terminators get their repaired successors, a block whose
//! terminator goes ends with a `br` to its last kept instruction's successor, EXIT becomes a `slice.exit` block
//! returning zero (`main`'s exit status 0), a `slice.entry` block jumps to ENTRY's successor when the entry block
//! keeps nothing, phis are rebuilt for their blocks' new predecessors, and emptied blocks are deleted. In a
//! dynamic slice ([`crate::slice_profile`]) a kept branch's never-taken arcs go to `slice.off_profile`, a trap.

use crate::slice_graph::{is_ignored, FunctionGraph};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMOpcode, LLVMTypeKind};
use pathprof_core::slicing::{Label, ProgramGraph, Slice, StmtId};
use std::collections::{HashMap, HashSet};

/// Where a repaired arc goes in the rewritten function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Block(LLVMBasicBlockRef),
    Exit,
    /// An arc the profile of a dynamic slice never saw taken: `slice.off_profile` traps.
    OffProfile,
}

/// How a block that keeps instructions ends.
enum End {
    /// Its terminator stays, with these successors (by successor index).
    Keep(LLVMValueRef, Vec<Target>),
    /// Its terminator goes; a `br` to this target follows the last kept instruction.
    Branch(Target),
}

/// The checked rewrite of one function.
pub struct Plan {
    kept: HashSet<LLVMValueRef>,
    ends: Vec<(LLVMBasicBlockRef, End)>,
    entry: Option<Target>,
}

/// Checks that `slice` rewrites into valid IR and says how; no IR changes. `restricted`: the graph holds only
/// the arcs a profile shows taken, so a kept branch may lack some successors (they go to `slice.off_profile`).
pub fn plan(fg: &FunctionGraph, slice: &Slice, restricted: bool) -> Result<Plan, String> {
    let inst = |v: StmtId| fg.inst[v.index()];
    let block_of = |v: StmtId| unsafe { LLVMGetInstructionParent(inst(v)) };
    let kept: HashSet<LLVMValueRef> = slice.kept().filter(|&v| v.index() >= 2).map(inst).collect();
    let mut first_kept: HashMap<LLVMBasicBlockRef, StmtId> = HashMap::new();
    for v in slice.kept().filter(|&v| v.index() >= 2) {
        first_kept.entry(block_of(v)).or_insert(v);
    }
    let target = |v: StmtId| -> Result<Target, String> {
        if v == ProgramGraph::EXIT {
            return Ok(Target::Exit);
        }
        let bb = block_of(v);
        if first_kept.get(&bb) != Some(&v) {
            return Err(format!("internal: a repaired arc enters the middle of a block at {v}"));
        }
        Ok(Target::Block(bb))
    };
    let mut ends = Vec::new();
    for &bb in &fg.reachable {
        let vs: Vec<StmtId> = crate::ir::instructions(bb)
            .into_iter()
            .filter(|&i| !is_ignored(i) && kept.contains(&i))
            .map(|i| fg.vertex[&i])
            .collect();
        let Some(&last) = vs.last() else { continue };
        for (k, &v) in vs.iter().enumerate() {
            let i = inst(v);
            for op in (0..unsafe { LLVMGetNumOperands(i) }).map(|n| unsafe { LLVMGetOperand(i, n as u32) }) {
                if fg.vertex.contains_key(&op) && !kept.contains(&op) {
                    return Err(format!("internal: kept {v} uses a deleted instruction"));
                }
            }
            if let Some(&w) = vs.get(k + 1) {
                if slice.successor(v, Label::TRUE) != Some(w) {
                    return Err(format!("internal: {v} does not fall through to {w} in the slice"));
                }
            }
        }
        let t = inst(last);
        let end = if crate::ir::terminator(bb) == Some(t) {
            let n = crate::ir::successors(t).len();
            let succs = (0..n)
                .map(|l| match slice.successor(last, Label(l as u32)) {
                    Some(s) => target(s),
                    None if restricted => Ok(Target::OffProfile),
                    None => Err("internal: a lost successor".to_string()),
                })
                .collect::<Result<_, _>>()?;
            End::Keep(t, succs)
        } else {
            End::Branch(target(slice.successor(last, Label::TRUE).ok_or("internal: a lost successor")?)?)
        };
        ends.push((bb, end));
    }
    let start = slice.successor(ProgramGraph::ENTRY, Label::TRUE).ok_or("internal: no entry successor")?;
    let entry_block = fg.reachable[0];
    let entry = if first_kept.get(&entry_block) == Some(&start) { None } else { Some(target(start)?) };
    Ok(Plan { kept, ends, entry })
}

/// Rewrites `f` per `plan`. Errors only where the plan could not foresee (a phi without a value for a new
/// predecessor); the caller runs this on a clone first and verifies it.
pub fn apply(f: LLVMValueRef, plan: &Plan) -> Result<(), String> {
    unsafe {
        let ctx = LLVMGetTypeContext(LLVMTypeOf(f));
        let builder = LLVMCreateBuilderInContext(ctx);
        let result = apply_with(f, plan, ctx, builder);
        LLVMDisposeBuilder(builder);
        result
    }
}

unsafe fn apply_with(f: LLVMValueRef, plan: &Plan, ctx: LLVMContextRef, b: LLVMBuilderRef) -> Result<(), String> {
    let mut exit_block = None;
    let mut trap_block = None;
    let mut resolve = |t: Target| -> LLVMBasicBlockRef {
        match t {
            Target::Block(bb) => bb,
            Target::OffProfile => *trap_block.get_or_insert_with(|| {
                let bb = LLVMAppendBasicBlockInContext(ctx, f, c"slice.off_profile".as_ptr());
                LLVMPositionBuilderAtEnd(b, bb);
                let m = LLVMGetGlobalParent(f);
                let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), std::ptr::null_mut(), 0, 0);
                let mut trap = LLVMGetNamedFunction(m, c"llvm.trap".as_ptr());
                if trap.is_null() {
                    trap = LLVMAddFunction(m, c"llvm.trap".as_ptr(), fty);
                }
                LLVMBuildCall2(b, fty, trap, std::ptr::null_mut(), 0, c"".as_ptr());
                LLVMBuildUnreachable(b);
                bb
            }),
            Target::Exit => *exit_block.get_or_insert_with(|| {
                let bb = LLVMAppendBasicBlockInContext(ctx, f, c"slice.exit".as_ptr());
                LLVMPositionBuilderAtEnd(b, bb);
                let ret = LLVMGetReturnType(LLVMGlobalGetValueType(f));
                if LLVMGetTypeKind(ret) == LLVMTypeKind::LLVMVoidTypeKind {
                    LLVMBuildRetVoid(b);
                } else {
                    LLVMBuildRet(b, LLVMConstNull(ret));
                }
                bb
            }),
        }
    };
    // Delete what the slice drops (every instruction of unreachable blocks included).
    let doomed: Vec<LLVMValueRef> =
        crate::ir::blocks(f).into_iter().flat_map(crate::ir::instructions).filter(|i| !plan.kept.contains(i)).collect();
    for &i in &doomed {
        if LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMTypeKind::LLVMVoidTypeKind {
            LLVMReplaceAllUsesWith(i, LLVMGetPoison(LLVMTypeOf(i)));
        }
    }
    for &i in &doomed {
        LLVMInstructionEraseFromParent(i);
    }
    for (bb, end) in &plan.ends {
        match end {
            End::Keep(t, succs) => {
                for (k, &s) in succs.iter().enumerate() {
                    LLVMSetSuccessor(*t, k as u32, resolve(s));
                }
            }
            End::Branch(s) => {
                let to = resolve(*s);
                LLVMPositionBuilderAtEnd(b, *bb);
                LLVMBuildBr(b, to);
            }
        }
    }
    if let Some(t) = plan.entry {
        let to = resolve(t);
        let first = LLVMGetFirstBasicBlock(f);
        let bb = LLVMInsertBasicBlockInContext(ctx, first, c"slice.entry".as_ptr());
        LLVMPositionBuilderAtEnd(b, bb);
        LLVMBuildBr(b, to);
    }
    rebuild_phis(f, b)?;
    for bb in crate::ir::blocks(f) {
        if LLVMGetFirstInstruction(bb).is_null() {
            LLVMDeleteBasicBlock(bb);
        }
    }
    Ok(())
}

/// Gives every phi exactly one entry per predecessor edge of its block in the rewritten CFG, each with the value
/// it had for that block.
unsafe fn rebuild_phis(f: LLVMValueRef, b: LLVMBuilderRef) -> Result<(), String> {
    let mut preds: HashMap<LLVMBasicBlockRef, Vec<LLVMBasicBlockRef>> = HashMap::new();
    for bb in crate::ir::blocks(f) {
        if let Some(t) = crate::ir::terminator(bb) {
            for s in crate::ir::successors(t) {
                preds.entry(s).or_default().push(bb);
            }
        }
    }
    for bb in crate::ir::blocks(f) {
        let phis: Vec<LLVMValueRef> =
            crate::ir::instructions(bb).into_iter().filter(|&i| crate::ir::opcode(i) == LLVMOpcode::LLVMPHI).collect();
        let want = preds.get(&bb).cloned().unwrap_or_default();
        for phi in phis {
            let old: Vec<(LLVMBasicBlockRef, LLVMValueRef)> = (0..LLVMCountIncoming(phi))
                .map(|k| (LLVMGetIncomingBlock(phi, k), LLVMGetIncomingValue(phi, k)))
                .collect();
            let mut have: Vec<_> = old.iter().map(|p| p.0).collect();
            let mut sorted_want = want.clone();
            have.sort();
            sorted_want.sort();
            if have == sorted_want {
                continue;
            }
            LLVMPositionBuilderBefore(b, phi);
            let new = LLVMBuildPhi(b, LLVMTypeOf(phi), c"".as_ptr());
            for &p in &want {
                let (_, v) = *old
                    .iter()
                    .find(|(ob, _)| *ob == p)
                    .ok_or("a kept phi has no value for a new predecessor of its block")?;
                let (mut vs, mut bs) = ([v], [p]);
                LLVMAddIncoming(new, vs.as_mut_ptr(), bs.as_mut_ptr(), 1);
            }
            LLVMReplaceAllUsesWith(phi, new);
            LLVMInstructionEraseFromParent(phi);
        }
    }
    Ok(())
}
