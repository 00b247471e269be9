//! Abandoned activations (`regenerate`'s "Abandoned activations"): hand-written bit streams of an exception
//! thrown in a traced callback and caught by the untraced code that called it regenerate into the
//! hand-derived block sequence; markers whose depth fits no waiting activation, or whose call site is not the
//! one that activation waits at, are refused.

use super::*;
use crate::graph::{ordered_cfg, Leave};
use crate::{BlockId, Cfg};

const FUNC_BITS: u8 = 4;
const ABANDON: u32 = 14;

/// main (f0): block 0 has `calls` call sites into untraced code (a library that calls back f1), then block 1
/// returns. EXIT is block 2.
fn main_cfg() -> Cfg {
    use Leave::*;
    ordered_cfg(2, &[(0, 1, B), (1, 2, R)])
}

/// f1 (the callback) and f2: block 0 has one call site (f1: a direct call of f2; f2: `__cxa_throw`, which may
/// not return), then block 1 returns. EXIT is block 2.
fn thrower_cfg() -> Cfg {
    use Leave::*;
    ordered_cfg(2, &[(0, 1, B), (0, 2, T), (1, 2, R)])
}

/// The functions numbered as the writer numbers call sites: from 1, over the functions' blocks and calls.
fn program(main_calls: u32) -> Program {
    let (m, t) = (main_cfg(), thrower_cfg());
    let tables = |g: &Cfg, calls: Vec<u32>, first: u32| {
        let calls = CallSites::new(g, calls).unwrap();
        FuncTables::build(g, &calls, &bit_tracing_with(g, &calls)).unwrap().with_first_site(first)
    };
    let funcs = vec![
        tables(&m, vec![main_calls, 0], 1),
        tables(&t, vec![1, 0], 1 + main_calls),
        tables(&t, vec![1, 0], 2 + main_calls),
    ];
    Program::with_func_bits(funcs, FUNC_BITS).unwrap().with_abandon(FuncId(ABANDON)).unwrap()
}

fn enter(w: &mut BitWriter, f: u32) {
    w.write(1, 1);
    w.write(f, FUNC_BITS);
}

fn abandon_marker(w: &mut BitWriter, depth: u32, site: u32) {
    enter(w, ABANDON);
    w.write(depth, 32);
    w.write(site, 32);
}

fn run(main_calls: u32, w: BitWriter) -> Result<Vec<(FuncId, BlockId)>, RegenError> {
    let trace = w.finish();
    let mut steps = Vec::new();
    regenerate(&program(main_calls), &mut BitReader::new(&trace), &mut steps, 1000)?;
    Ok(steps)
}

fn steps(s: &[(u32, u32)]) -> Vec<(FuncId, BlockId)> {
    s.iter().map(|&(f, b)| (FuncId(f), BlockId(b))).collect()
}

#[test]
fn a_callback_that_throws_into_untraced_code_returns_its_callers_call_site() {
    // main → (untraced) → f1 → f2 throws; the untraced code catches and returns to main's call site, which
    // finds f2's state and writes the marker with its own depth, 1: f1 and f2 are dropped without returns.
    let mut w = BitWriter::new();
    enter(&mut w, 0); // main, block 0, its call site
    enter(&mut w, 1); // the callback f1, block 0, its call of f2
    enter(&mut w, 2); // f2, block 0, the __cxa_throw call
    abandon_marker(&mut w, 1, 1); // read at f2's call site: main's call site (site 1) returns
    w.write(0, 1); // the top level's Done
    assert_eq!(run(1, w).unwrap(), steps(&[(0, 0), (1, 0), (2, 0), (0, 1), (0, 2)]));
}

#[test]
fn the_marker_is_its_call_sites_done_and_the_next_site_reads_on() {
    // main's block 0 has two call sites: the marker ends the first; the second calls f1 again, which returns.
    let mut w = BitWriter::new();
    enter(&mut w, 0);
    enter(&mut w, 1);
    abandon_marker(&mut w, 1, 1); // f1's call site (its throw): main's first site returns
    enter(&mut w, 1); // main's second site calls back f1
    w.write(0, 1); // f1's call site: Done; f1 returns
    w.write(0, 1); // main's second site: Done
    w.write(0, 1); // the top level's Done
    let s = run(2, w).unwrap();
    assert_eq!(s, steps(&[(0, 0), (1, 0), (1, 0), (1, 1), (1, 2), (0, 1), (0, 2)]));
}

#[test]
fn a_marker_that_fits_no_waiting_activation_is_refused() {
    // Depth 0, the innermost activation itself (2: nothing deeper was left), and deeper than the stack.
    for depth in [0, 2, 3] {
        let mut w = BitWriter::new();
        enter(&mut w, 0);
        enter(&mut w, 1);
        abandon_marker(&mut w, depth, 1);
        assert_eq!(run(1, w).err(), Some(RegenError::BadAbandon(Abandon { depth, site: 1 })), "depth {depth}");
    }
}

#[test]
fn a_marker_naming_another_call_site_is_refused() {
    // main waits at its second call site (site 2) when f1's throw is caught: a marker naming site 1 — what a
    // state from another stack (a coroutine switch) could carry — is refused, never taken for site 2's return.
    let mut w = BitWriter::new();
    enter(&mut w, 0);
    w.write(0, 1); // main's first site: Done
    enter(&mut w, 1);
    abandon_marker(&mut w, 1, 1);
    assert_eq!(run(2, w).err(), Some(RegenError::BadAbandon(Abandon { depth: 1, site: 1 })));
    let mut w = BitWriter::new();
    enter(&mut w, 0);
    w.write(0, 1);
    enter(&mut w, 1);
    abandon_marker(&mut w, 1, 2);
    w.write(0, 1); // the top level's Done
    assert_eq!(run(2, w).unwrap(), steps(&[(0, 0), (1, 0), (0, 1), (0, 2)]));
}

#[test]
fn without_an_abandon_id_the_marker_is_an_unknown_function() {
    let mut w = BitWriter::new();
    enter(&mut w, 0);
    enter(&mut w, 1);
    abandon_marker(&mut w, 1, 1);
    let trace = w.finish();
    let (m, t) = (main_cfg(), thrower_cfg());
    let tables = |g: &Cfg, calls: Vec<u32>| {
        let calls = CallSites::new(g, calls).unwrap();
        FuncTables::build(g, &calls, &bit_tracing_with(g, &calls)).unwrap()
    };
    let funcs = vec![tables(&m, vec![1, 0]), tables(&t, vec![1, 0]), tables(&t, vec![1, 0])];
    let p = Program::with_func_bits(funcs, FUNC_BITS).unwrap();
    let mut out = Vec::new();
    assert_eq!(regenerate(&p, &mut BitReader::new(&trace), &mut out, 1000), Err(RegenError::UnknownFunction(ABANDON)));
}
