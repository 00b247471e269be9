//! Mode icache: which traced block each machine block id of the plain build will be.
//!
//! `.llvm_bb_addr_map` numbers machine blocks in the order instruction selection meets the IR blocks, and
//! codegen's IR passes (loop canonicalisation for LoopStrengthReduce, CodeGenPrepare, …) insert and remove
//! blocks before that: at -O2 most loops gain a preheader or an exit block there, and every id after it shifts.
//! The shim runs those passes on a copy of each function before it is traced (`pathprof_shim_predict_isel_blocks`)
//! and this module turns the result into the table the trace metadata carries
//! ([`pathprof_format::trace::TraceModuleMeta::isel`]); `pathprof icache` proves it against the binary.

use crate::shim;
use inkwell::llvm_sys::prelude::*;
use pathprof_format::trace::IselPrediction;
use std::collections::{HashMap, HashSet};
use std::os::raw::c_void;

/// The blocks instruction selection will number for `f` as it stands (before it is split or traced), each one of
/// `f`'s blocks or `None` for a block the passes add; `None` when the shim cannot predict.
pub fn predict(f: LLVMValueRef, fam: *mut c_void) -> Option<Vec<Option<LLVMBasicBlockRef>>> {
    let cap = crate::ir::blocks(f).len() * 4 + 64;
    let mut out: Vec<LLVMBasicBlockRef> = vec![std::ptr::null_mut(); cap];
    let n = unsafe { shim::pathprof_shim_predict_isel_blocks(f, fam, out.as_mut_ptr(), cap) };
    let n = usize::try_from(n).ok()?;
    out.truncate(n);
    Some(out.into_iter().map(|b| (!b.is_null()).then_some(b)).collect())
}

/// The prediction for the trace metadata: per machine id, the index of its block among `traced` (the traced
/// function's blocks in order), or `None` for a block codegen adds; then the traced blocks that are not among
/// `original` — the conditions `branch_split` cut, appended in the order instruction selection creates its own —
/// whose ids come after. `predicted` is [`predict`]'s answer for the function's blocks `original`. Empty when
/// it does not fit (a predicted block that is not traced, an entry that is not the first block).
pub fn machine_ids(
    predicted: &[Option<LLVMBasicBlockRef>],
    original: &[LLVMBasicBlockRef],
    traced: &[LLVMBasicBlockRef],
) -> IselPrediction {
    let index: HashMap<LLVMBasicBlockRef, u32> = traced.iter().enumerate().map(|(i, &b)| (b, i as u32)).collect();
    let mut ids = Vec::with_capacity(predicted.len());
    for b in predicted {
        match b {
            Some(b) => match index.get(b) {
                Some(&i) => ids.push(Some(i)),
                None => return IselPrediction::default(),
            },
            None => ids.push(None),
        }
    }
    if ids.first() != Some(&Some(0)) {
        return IselPrediction::default();
    }
    let original: HashSet<LLVMBasicBlockRef> = original.iter().copied().collect();
    let split = traced.iter().enumerate().filter(|(_, b)| !original.contains(b)).map(|(i, _)| i as u32).collect();
    IselPrediction { ids, split }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bb(n: usize) -> LLVMBasicBlockRef {
        // Distinct non-null addresses standing for blocks (never dereferenced).
        (0x1000 + 16 * n) as LLVMBasicBlockRef
    }

    #[test]
    fn a_preheader_shifts_later_ids_and_split_conditions_follow_the_prediction() {
        // f: blocks 0..4; codegen adds a block before 2 and deletes 3; branch_split appended block 4.
        let original = [bb(0), bb(1), bb(2), bb(3)];
        let traced = [bb(0), bb(1), bb(2), bb(3), bb(4)];
        let predicted = [Some(bb(0)), Some(bb(1)), None, Some(bb(2))];
        let p = machine_ids(&predicted, &original, &traced);
        assert_eq!((p.ids, p.split), (vec![Some(0), Some(1), None, Some(2)], vec![4]));
    }

    #[test]
    fn a_prediction_that_does_not_fit_is_dropped() {
        let original = [bb(0), bb(1)];
        assert_eq!(machine_ids(&[Some(bb(0)), Some(bb(7))], &original, &original), IselPrediction::default());
        assert_eq!(machine_ids(&[Some(bb(1)), Some(bb(0))], &original, &original), IselPrediction::default());
        assert_eq!(machine_ids(&[None, Some(bb(0))], &original, &original), IselPrediction::default());
    }
}
