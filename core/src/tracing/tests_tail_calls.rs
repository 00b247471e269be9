//! Tail calls (`regenerate`'s "Tail calls"): a hand-written bit stream of a caller whose direct call site
//! announces a function that tail-calls another regenerates into the hand-derived block sequence; read with
//! tables that do not say the announced function tail-calls, the same stream puts the tail callee at the top
//! level instead, which is why the flag travels with the tables.

use super::*;
use crate::graph::{ordered_cfg, Leave};
use crate::{BlockId, Cfg, EdgeId};

const FUNC_BITS: u8 = 4;

/// One block that returns (EXIT is block 1).
fn one_block() -> Cfg {
    ordered_cfg(1, &[(0, 1, Leave::R)])
}

/// main (f0): block 0 calls f1 directly (its one call site), then returns; f1: `musttail call f2; ret`
/// (no call site); f2: returns.
fn program(f1_tail_calls: bool) -> Program {
    let g = one_block();
    let tables = |calls: Vec<u32>| {
        let sites = CallSites::new(&g, calls).unwrap();
        FuncTables::build(&g, &sites, &bit_tracing_with(&g, &sites)).unwrap()
    };
    let main = tables(vec![1]).with_direct_callees([(BlockId(0), 0, FuncId(1))]).unwrap();
    let f1 = tables(vec![0]).with_tail_calls(f1_tail_calls);
    let funcs = vec![main, f1, tables(vec![0])];
    Program::with_func_bits(funcs, FUNC_BITS).unwrap()
}

#[derive(Default)]
struct Steps {
    blocks: Vec<(u32, u32)>,
}

impl StepSink for Steps {
    fn block(&mut self, f: FuncId, b: BlockId) {
        self.blocks.push((f.0, b.0));
    }
    fn edge(&mut self, _: FuncId, _: EdgeId) {}
    fn cut_to(&mut self, _: usize, _: Option<(BlockId, u32)>) {
        unreachable!("no longjmp or exception here")
    }
}

/// What the writer writes: main's entry at the top level (`1` + id), f1's announced entry at main's fresh
/// direct site (`1`), nothing for f1's end, f2's entry at the site, no longer fresh (`1` + id), main's Done
/// there (`0`: f1 did not bind the site), the top level's Done (`0`).
fn stream() -> BitTrace {
    let mut w = BitWriter::new();
    w.write(1, 1);
    w.write(0, FUNC_BITS);
    w.write(1, 1);
    w.write(1, 1);
    w.write(2, FUNC_BITS);
    w.write(0, 1);
    w.write(0, 1);
    w.finish()
}

fn run(f1_tail_calls: bool) -> Result<Vec<(u32, u32)>, RegenError> {
    let mut steps = Steps::default();
    regenerate(&program(f1_tail_calls), &mut BitReader::new(&stream()), &mut steps, 100)?;
    Ok(steps.blocks)
}

#[test]
fn a_tail_callee_runs_at_its_callers_call_site() {
    assert!(!program(true).func(FuncId(1)).unwrap().binds_its_site());
    assert!(!program(true).func(FuncId(1)).unwrap().is_marker_free());
    // main's block, f1's and its end, then f2's inside main's call, and main's end after both (EXIT is
    // block 1 of each).
    assert_eq!(run(true).unwrap(), vec![(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (0, 1)]);
}

#[test]
fn without_the_flag_the_site_would_end_with_the_tail_caller() {
    assert!(program(false).func(FuncId(1)).unwrap().binds_its_site());
    // f1's return implies main's Done: main returns, f2 is read as a second top-level activation, and main's
    // Done (`0`) as the thread's end — f2 after main, silently wrong.
    assert_eq!(run(false).unwrap(), vec![(0, 0), (1, 0), (1, 1), (0, 1), (2, 0), (2, 1)]);
}
