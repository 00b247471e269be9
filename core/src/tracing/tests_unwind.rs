//! Unwinding (exceptions, `regenerate`'s "Unwinding"): hand-written bit streams of a throw through frames with
//! and without landing pads regenerate into the hand-derived block sequence and edge crossings; markers that
//! fit no `invoke` are refused.

use super::*;
use crate::graph::{ordered_cfg, Leave};
use crate::{BlockId, Cfg, EdgeId};

const FUNC_BITS: u8 = 4;
const UNWIND: u32 = 15;

/// main (f0): block 0 `invoke f1` → normal 1 / unwind 2 (the landing pad: one call, `__cxa_begin_catch`),
/// both return. EXIT is block 3.
fn main_cfg() -> Cfg {
    use Leave::*;
    ordered_cfg(3, &[(0, 1, B), (0, 2, B), (1, 3, R), (2, 3, R)])
}

/// f1 with a cleanup: block 0 `invoke f2` → normal 1 / unwind 2 (the cleanup, one call to a destructor,
/// then `resume`).
fn cleanup_cfg() -> Cfg {
    main_cfg()
}

/// f2: block 0 calls `__cxa_throw` (may not return), then block 1 returns. EXIT is block 2.
fn thrower_cfg() -> Cfg {
    use Leave::*;
    ordered_cfg(2, &[(0, 1, B), (0, 2, T), (1, 2, R)])
}

fn program() -> Program {
    let invoking = |g: &Cfg| CallSites::new(g, vec![1, 0, 1]).unwrap().with_invokes(&[0]).unwrap();
    let (m, c, t) = (main_cfg(), cleanup_cfg(), thrower_cfg());
    let tables = |g: &Cfg, calls: &CallSites| FuncTables::build(g, calls, &bit_tracing_with(g, calls)).unwrap();
    let funcs = vec![
        tables(&m, &invoking(&m)),
        tables(&c, &invoking(&c)),
        tables(&t, &CallSites::new(&t, vec![1, 0]).unwrap()),
    ];
    Program::with_func_bits(funcs, FUNC_BITS).unwrap().with_unwind(FuncId(UNWIND)).unwrap()
}

struct Steps {
    blocks: Vec<(u32, u32)>,
    edges: Vec<(u32, u32)>,
    /// The depths the activations were cut to, in order.
    cuts: Vec<usize>,
}

impl StepSink for Steps {
    fn block(&mut self, f: FuncId, b: BlockId) {
        self.blocks.push((f.0, b.0));
    }
    fn edge(&mut self, f: FuncId, e: EdgeId) {
        self.edges.push((f.0, e.0));
    }
    fn cut_to(&mut self, depth: usize, resume: Option<(BlockId, u32)>) {
        assert!(resume.is_none(), "an exception resumes no setjmp");
        self.cuts.push(depth);
    }
}

fn enter(w: &mut BitWriter, f: u32) {
    w.write(1, 1);
    w.write(f, FUNC_BITS);
}

fn unwind_marker(w: &mut BitWriter, f: u32, depth: u32) {
    enter(w, UNWIND);
    w.write(f, FUNC_BITS);
    w.write(depth, 32);
}

fn run(w: BitWriter) -> Result<Steps, RegenError> {
    let trace = w.finish();
    let mut steps = Steps { blocks: Vec::new(), edges: Vec::new(), cuts: Vec::new() };
    regenerate(&program(), &mut BitReader::new(&trace), &mut steps, 1000)?;
    Ok(steps)
}

#[test]
fn an_invoke_block_is_no_predicate() {
    let p = program();
    // No bits at the invoke: its unwind edge is taken by a marker only.
    assert_eq!(p.func(FuncId(0)).unwrap().token_width(BlockId(0)), 0);
}

#[test]
fn a_throw_through_a_frame_without_landing_pad_lands_in_main() {
    // main → f1 → f2 throws; f1's landing pad does not match (the personality skips it): the marker names
    // main at depth 1, so f1 (depth 2) and f2 (depth 3) are dropped without their returns.
    let mut w = BitWriter::new();
    enter(&mut w, 0); // main, block 0, its invoke
    enter(&mut w, 1); // f1, block 0, its invoke
    enter(&mut w, 2); // f2, block 0, the __cxa_throw call
    unwind_marker(&mut w, 0, 1); // main's landing pad
    w.write(0, 1); // main block 2's call (__cxa_begin_catch): Done
    w.write(0, 1); // the top level's Done
    let s = run(w).unwrap();
    assert_eq!(s.blocks, vec![(0, 0), (1, 0), (2, 0), (0, 2), (0, 3)]);
    // main crossed its unwind edge (e1) and the landing pad's return (e3); nothing else.
    assert_eq!(s.edges, vec![(0, 1), (0, 3)]);
    assert_eq!(s.cuts, vec![1]);
}

#[test]
fn a_cleanup_resumes_and_the_next_landing_pad_catches() {
    let mut w = BitWriter::new();
    enter(&mut w, 0);
    enter(&mut w, 1);
    enter(&mut w, 2);
    unwind_marker(&mut w, 1, 2); // f1's cleanup pad
    w.write(0, 1); // its destructor call: Done; then `resume` (a return edge to EXIT)
    unwind_marker(&mut w, 0, 1); // main's landing pad, read at main's invoke
    w.write(0, 1);
    w.write(0, 1);
    let s = run(w).unwrap();
    assert_eq!(s.blocks, vec![(0, 0), (1, 0), (2, 0), (1, 2), (1, 3), (0, 2), (0, 3)]);
    assert_eq!(s.edges, vec![(1, 1), (1, 3), (0, 1), (0, 3)]);
    // f2 dropped at f1's pad (depth 2), then f1 — returned through `resume` — leaves main alone at depth 1.
    assert_eq!(s.cuts, vec![2, 1]);
}

#[test]
fn a_normal_return_takes_the_normal_edge_without_bits() {
    let mut w = BitWriter::new();
    enter(&mut w, 0);
    w.write(0, 1); // the invoke's callee untraced: Done
    w.write(0, 1);
    let s = run(w).unwrap();
    assert_eq!(s.blocks, vec![(0, 0), (0, 1), (0, 3)]);
    assert_eq!(s.edges, vec![(0, 0), (0, 2)]);
    assert!(s.cuts.is_empty());
}

#[test]
fn a_marker_that_fits_no_invoke_is_refused() {
    // f2 waits at a plain call, not an invoke.
    let mut w = BitWriter::new();
    enter(&mut w, 0);
    enter(&mut w, 1);
    enter(&mut w, 2);
    unwind_marker(&mut w, 2, 3);
    assert_eq!(run(w).err(), Some(RegenError::BadUnwind(Unwind { func: FuncId(2), depth: 3 })));
    // The wrong function at the depth, and a depth deeper than the stack.
    for (f, depth) in [(1, 1), (0, 4), (0, 0)] {
        let mut w = BitWriter::new();
        enter(&mut w, 0);
        enter(&mut w, 1);
        enter(&mut w, 2);
        unwind_marker(&mut w, f, depth);
        assert_eq!(run(w).err(), Some(RegenError::BadUnwind(Unwind { func: FuncId(f), depth })));
    }
}
