//! Paper oracles for tracing: Ball's thesis Ex. 1 (Figure 3.11, TOPLAS'94 Figure 13) — its witness sets, the
//! trace (t, u, v, EOF) of P A C P B A C P B C EXIT and its regeneration (Figure 3.12), the negative test
//! without the witness on P→A — and the same graph under blocking, with values derived by hand from the
//! definitions in the notes, not from the implementation.

use super::bits::{BitReader, BitWriter};
use super::check::{check_blocking, check_trace, witness_set, TraceViolation, WitnessOf};
use super::encode::{encode, Event};
use super::placement::{blockers, place_witnesses, Blocking, WitnessPlan};
use super::regenerate::regenerate;
use super::tables::{FuncTables, Program, TablesError};
use super::tokens::{Token, TokenSink, TokenSource};
use super::view::CallSites;
use super::FuncId;
use crate::graph::{test_cfg, BlockId, Cfg, EdgeId};
use crate::weighting::uniform;

const P: u32 = 0;
const A: u32 = 1;
const B: u32 = 2;
const C: u32 = 3;
const EXIT: u32 = 4;

/// Figure 3.11: e0 P→A, e1 P→B, e2 B→A, e3 B→C, e4 A→C, e5 C→P, e6 C→EXIT (return), e7 EXIT→P (not traced).
fn fig_3_11() -> Cfg {
    test_cfg(4, &[(P, A), (P, B), (B, A), (B, C), (A, C), (C, P)], &[C])
}

fn e(i: u32) -> EdgeId {
    EdgeId(i)
}

/// t on P→A, u on B→A, v on B→C.
fn thesis_plan(g: &Cfg) -> WitnessPlan {
    WitnessPlan::from_edges(g, &[e(0), e(2), e(3)]).unwrap()
}
const T: u32 = 0;
const U: u32 = 1;
const V: u32 = 2;

/// P A C P B A C P B C EXIT as edges.
const EXECUTION: [u32; 10] = [0, 4, 5, 1, 2, 4, 5, 1, 3, 6];
const BLOCKS: [u32; 11] = [P, A, C, P, B, A, C, P, B, C, EXIT];

fn events(edges: &[u32]) -> Vec<Event> {
    let mut ev = vec![Event::Enter(FuncId(0))];
    ev.extend(edges.iter().map(|&i| Event::Edge(e(i))));
    ev
}

fn blocks_of(program: &Program, tokens: &[Token]) -> Vec<u32> {
    let mut out: Vec<(FuncId, BlockId)> = Vec::new();
    let mut src = TokenSource::new(program, tokens);
    regenerate(program, &mut src, &mut out, 1000).unwrap();
    assert_eq!(src.remaining(), 0);
    out.iter().map(|&(_, b)| b.0).collect()
}

#[test]
fn thesis_fig_3_11_witness_sets() {
    let g = fig_3_11();
    let plan = thesis_plan(&g);
    let w = |i| witness_set(&g, &plan, e(i));
    let (t, u, v) = (WitnessOf::Edge(e(0)), WitnessOf::Edge(e(2)), WitnessOf::Edge(e(3)));
    assert_eq!(w(0), vec![t]); // witness(P,A)
    assert_eq!(w(1), vec![u, v]); // witness(P,B)
    assert_eq!(w(2), vec![u]); // witness(B,A)
    assert_eq!(w(3), vec![v]); // witness(B,C)
    assert_eq!(w(5), vec![t, u, v]); // witness(C,P)
    assert_eq!(w(6), vec![WitnessOf::Eof]); // witness(C,EXIT)
    check_trace(&g, &plan).unwrap();
}

#[test]
fn thesis_fig_3_11_is_the_chord_set_of_its_spanning_tree() {
    // Weights that make {P→B, A→C, C→P, C→EXIT} the unique maximum spanning tree; without blocking the chords
    // are exactly the thesis's Ewit.
    let g = fig_3_11();
    let w = [1.0, 3.0, 1.0, 1.0, 3.0, 3.0, 3.0, 0.0];
    let plan = place_witnesses(&g, &CallSites::none(&g), &w, Blocking::SingleProcedure).unwrap();
    assert_eq!(plan, thesis_plan(&g));
}

#[test]
fn thesis_fig_3_11_trace_and_regeneration() {
    let g = fig_3_11();
    let program = Program::new(vec![FuncTables::build(&g, &CallSites::none(&g), &thesis_plan(&g)).unwrap()]);
    assert!(program.func(FuncId(0)).unwrap().writes_eof());
    let mut sink = TokenSink::new(&program);
    encode(&program, &events(&EXECUTION), &mut sink).unwrap();
    let (t, u, v) = (Token::Witness(T), Token::Witness(U), Token::Witness(V));
    assert_eq!(sink.tokens, vec![Token::Enter(FuncId(0)), t, u, v, Token::Eof, Token::Done]);
    // The papers' trace, written by hand, regenerates the execution; at the second P, u is still pending and
    // selects B.
    let hand = [Token::Enter(FuncId(0)), t, u, v, Token::Eof, Token::Done];
    assert_eq!(blocks_of(&program, &hand), BLOCKS);
    // Four symbols (t, u, v, EOF): 2 bits each, plus the Enter flag and the final Done flag (one function: a
    // function id takes 0 bits).
    let mut bits = BitWriter::new();
    encode(&program, &events(&EXECUTION), &mut bits).unwrap();
    let bits = bits.finish();
    assert_eq!(bits.bits, 1 + 4 * 2 + 1);
    let mut out: Vec<(FuncId, BlockId)> = Vec::new();
    regenerate(&program, &mut BitReader::new(&bits), &mut out, 1000).unwrap();
    assert_eq!(out.iter().map(|&(_, b)| b.0).collect::<Vec<_>>(), BLOCKS);
}

#[test]
fn thesis_fig_3_11_without_the_witness_on_p_a_fails_trace() {
    let g = fig_3_11();
    let plan = WitnessPlan::from_edges(&g, &[e(2), e(3)]).unwrap();
    let (u, v) = (WitnessOf::Edge(e(2)), WitnessOf::Edge(e(3)));
    assert_eq!(witness_set(&g, &plan, e(0)), vec![u, v, WitnessOf::Eof]); // witness(P,A)
    assert_eq!(witness_set(&g, &plan, e(1)), vec![u, v]); // witness(P,B)
    let violation = TraceViolation::NotDisjoint { predicate: BlockId(P), first: e(0), second: e(1), witness: u };
    assert_eq!(check_trace(&g, &plan), Err(violation.clone()));
    assert_eq!(FuncTables::build(&g, &CallSites::none(&g), &plan).unwrap_err(), TablesError::Placement(violation));
    // Both executions write (v, EOF): the witnessed edges they cross are e3 (v) only.
    for run in [&[0u32, 4, 5, 1, 3, 6][..], &[1, 3, 6]] {
        let written: Vec<EdgeId> = run.iter().map(|&i| e(i)).filter(|&x| plan.is_witnessed(x)).collect();
        assert_eq!(written, vec![e(3)]);
    }
}

#[test]
fn thesis_fig_3_11_under_blocking() {
    let g = fig_3_11();
    let calls = CallSites::none(&g);
    // The thesis placement leaves C a witness-free path to EXIT.
    assert_eq!(
        check_blocking(&g, &calls, &thesis_plan(&g)),
        Err(TraceViolation::NotBlocking { predicate: BlockId(C), edge: e(6) })
    );
    assert_eq!(blockers(&g, &calls, BlockId(EXIT)), vec![e(6)]);
    // Step 1 witnesses C→EXIT; step 2, uniform weights, Kruskal by edge id over e0..e5: e0 P–A, e1 P–B, e3
    // B–C join the forest, e2, e4, e5 close cycles. Witnesses e2, e4, e5, e6 get values 0, 1, 2, 3.
    let plan = place_witnesses(&g, &calls, &uniform(&g), Blocking::CallsAndExit).unwrap();
    assert_eq!(plan, WitnessPlan::from_edges(&g, &[e(2), e(4), e(5), e(6)]).unwrap());
    check_trace(&g, &plan).unwrap();
    check_blocking(&g, &calls, &plan).unwrap();
    let program = Program::new(vec![FuncTables::build(&g, &calls, &plan).unwrap()]);
    assert!(!program.func(FuncId(0)).unwrap().writes_eof());
    // The execution crosses e4 (1), e5 (2), e2 (0), e4 (1), e5 (2), e6 (3); no EOF.
    let mut sink = TokenSink::new(&program);
    encode(&program, &events(&EXECUTION), &mut sink).unwrap();
    let w = Token::Witness;
    assert_eq!(sink.tokens, vec![Token::Enter(FuncId(0)), w(1), w(2), w(0), w(1), w(2), w(3), Token::Done]);
    assert_eq!(blocks_of(&program, &sink.tokens), BLOCKS);
}

#[test]
fn blockers_sit_at_the_nearest_predicates() {
    // A call in A: blockers(A) are the edges into A from predicates, P→A and B→A; a call in C reaches back
    // through the non-predicate A to P→A and B→A, and directly to B→C.
    let g = fig_3_11();
    let calls = CallSites::new(&g, vec![0, 1, 0, 0]).unwrap();
    assert_eq!(blockers(&g, &calls, BlockId(A)), vec![e(0), e(2)]);
    assert_eq!(blockers(&g, &calls, BlockId(C)), vec![e(0), e(2), e(3)]);
}
