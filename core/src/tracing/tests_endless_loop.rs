//! A loop that reads nothing (`regenerate`'s `RegenError::EndlessLoop`): a thread still going round a loop
//! without decisions or call sites when its stream ended (another thread's `exit`) is reported as such after
//! a bounded walk, not walked forever (QuickJS's worker threads: `pathprof trace` spun for minutes).

use super::*;
use crate::graph::{ordered_cfg, Leave};
use crate::{BlockId, Cfg};

const FUNC_BITS: u8 = 4;

/// main (f0): block 0 decides between block 1, which loops to itself forever (`for (;;) n++;`), and block 2,
/// which returns. EXIT is block 3.
fn main_cfg() -> Cfg {
    use Leave::*;
    ordered_cfg(3, &[(0, 1, B), (0, 2, B), (1, 1, B), (2, 3, R)])
}

/// main's entry at the top level, then its decision (`0`: the loop, `1`: the return) and, after a return, the
/// top level's Done.
fn run(decision: u32) -> (Result<u64, RegenError>, Vec<(FuncId, BlockId)>) {
    let g = main_cfg();
    let calls = CallSites::new(&g, vec![0, 0, 0]).unwrap();
    let program =
        Program::with_func_bits(vec![FuncTables::build(&g, &calls, &bit_tracing_with(&g, &calls)).unwrap()], FUNC_BITS)
            .unwrap();
    let mut w = BitWriter::new();
    w.write(1, 1);
    w.write(0, FUNC_BITS);
    w.write(decision, 1);
    if decision == 1 {
        w.write(0, 1);
    }
    let trace = w.finish();
    let mut steps = Vec::new();
    let r = regenerate(&program, &mut BitReader::new(&trace), &mut steps, u64::MAX);
    (r, steps)
}

#[test]
fn a_loop_without_decisions_ends_the_walk_with_its_block() {
    let (r, steps) = run(0);
    assert_eq!(r, Err(RegenError::EndlessLoop { func: FuncId(0), block: BlockId(1) }));
    // The entry and the loop, gone round a bounded number of times (about the function's 4 vertices).
    assert_eq!(steps[..2], [(FuncId(0), BlockId(0)), (FuncId(0), BlockId(1))]);
    assert!(steps[1..].iter().all(|&s| s == (FuncId(0), BlockId(1))) && steps.len() <= 2 * 4, "{steps:?}");
}

#[test]
fn the_other_way_returns() {
    let (r, steps) = run(1);
    assert_eq!(r, Ok(3));
    assert_eq!(steps, [(FuncId(0), BlockId(0)), (FuncId(0), BlockId(2)), (FuncId(0), BlockId(3))]);
}
