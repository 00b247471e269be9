//! Paper oracles for Ball–Larus path profiling: the lecture example of the BL96 notes (C.2–C.5) — its DAG,
//! numbering, encoding table, regeneration, the increments of both oracles and every spanning tree — with
//! values derived by hand from the notes, not from the implementation.

use super::dag::DagEdgeId;
use super::increments::{IncrementError, Increments};
use super::numbering::Numbering;
use super::regenerate::{decode, encode, to_cfg_path, DecodeError, PathEnd, PathStart};
use super::tests_prop::{
    b, check_dag, check_numbering, check_simulation, d, dag_of, enumerate_paths, inc_sum, val_sum,
};
use crate::fixtures::{
    lecture_cfg, LECTURE_A as A, LECTURE_B as B, LECTURE_C as C, LECTURE_D as D, LECTURE_E as E, LECTURE_F as F,
};
use crate::graph::EdgeId;

/// DAG edges of [`lecture_cfg`]: d0 A→C, d1 A→B, d2 B→C, d3 B→D, d4 C→D, d5 D→F, d6 D→E, d7 E→F, d8 F→EXIT,
/// d9 EXIT→A.
fn lecture_path(blocks: &[u32]) -> Vec<DagEdgeId> {
    let dag = dag_of(&lecture_cfg());
    let mut path: Vec<DagEdgeId> = blocks
        .windows(2)
        .map(|w| *dag.out_edges(b(w[0])).iter().find(|&&e| dag.edge(e).to == b(w[1])).unwrap())
        .collect();
    path.push(d(8));
    path
}

#[test]
fn ball_larus_1996_lecture_dag_shape() {
    let cfg = lecture_cfg();
    let dag = dag_of(&cfg);
    check_dag(&cfg, &dag);
    assert_eq!(dag.num_edges(), 10);
    assert_eq!(dag.out_edges(b(A)), &[d(0), d(1)]);
    assert_eq!(dag.out_edges(b(D)), &[d(5), d(6)]);
    assert_eq!(dag.in_edges(b(F)), &[d(5), d(7)]);
    assert!(dag.back_edges().is_empty() && dag.cut_edges().is_empty());
    assert_eq!(dag.topological_order().first(), Some(&b(A)));
}

#[test]
fn ball_larus_1996_lecture_numbering() {
    let dag = dag_of(&lecture_cfg());
    let n = Numbering::compute(&dag).unwrap();
    let np: Vec<u128> = (0..7).map(|v| n.num_paths_from(b(v))).collect();
    assert_eq!(np, vec![6, 4, 2, 2, 1, 1, 1], "NumPaths A..F, EXIT");
    assert_eq!(n.num_paths(), 6);
    // Val: D→E = 1, B→D = 2, A→B = 2, all others 0.
    assert_eq!(n.vals(), &[0, 2, 0, 2, 0, 0, 1, 0, 0, 0]);
    assert_eq!(n.num_paths_per_vertex().iter().take(6).sum::<u128>(), 16, "notes C.6: Σ NumPaths = 16");
}

#[test]
fn ball_larus_1996_lecture_encoding_table() {
    let dag = dag_of(&lecture_cfg());
    let n = Numbering::compute(&dag).unwrap();
    let table: [(&[u32], u128); 6] = [
        (&[A, C, D, F], 0),
        (&[A, C, D, E, F], 1),
        (&[A, B, C, D, F], 2),
        (&[A, B, C, D, E, F], 3),
        (&[A, B, D, F], 4),
        (&[A, B, D, E, F], 5),
    ];
    for (blocks, r) in table {
        let p = lecture_path(blocks);
        assert_eq!(encode(&dag, &n, &p).unwrap(), r, "{blocks:?}");
        assert_eq!(decode(&dag, &n, r).unwrap(), p, "r = {r}");
        let cp = to_cfg_path(&dag, &p).unwrap();
        assert_eq!(cp.blocks, blocks.iter().map(|&x| b(x)).collect::<Vec<_>>());
        assert_eq!(cp.start, PathStart::Entry);
        assert_eq!(cp.end, PathEnd::Exit { edge: EdgeId(8) });
    }
    check_numbering(&dag, &n, 100).unwrap();
}

#[test]
fn ball_larus_1996_lecture_regeneration() {
    // Notes C.5: r = 4 → ABDF, r = 1 → ACDEF.
    let dag = dag_of(&lecture_cfg());
    let n = Numbering::compute(&dag).unwrap();
    let blocks = |r| to_cfg_path(&dag, &decode(&dag, &n, r).unwrap()).unwrap().blocks;
    assert_eq!(blocks(4), vec![b(A), b(B), b(D), b(F)]);
    assert_eq!(blocks(1), vec![b(A), b(C), b(D), b(E), b(F)]);
    assert_eq!(decode(&dag, &n, 6), Err(DecodeError::OutOfRange { r: 6, num_paths: 6 }));
}

/// Weights in DAG-edge order d0 A→C, d1 A→B, d2 B→C, d3 B→D, d4 C→D, d5 D→F, d6 D→E, d7 E→F, d8 F→EXIT,
/// d9 EXIT→A; F→EXIT stands in for the lecture's F (= exit) and gets the top weight so it is a tree edge.
fn lecture_increments(w: [f64; 10]) -> (Increments, Vec<i128>) {
    let dag = dag_of(&lecture_cfg());
    let n = Numbering::compute(&dag).unwrap();
    let inc = Increments::compute(&dag, &n, &w, &[]).unwrap();
    for p in enumerate_paths(&dag, 10).unwrap() {
        assert_eq!(inc_sum(&inc, &p), val_sum(&n, &p) as i128);
    }
    let v = inc.increments().to_vec();
    (inc, v)
}

#[test]
fn ball_larus_1996_lecture_oracle1_uniform_increments() {
    // A→B ½, A→C ½, B→C ¼, B→D ¼, C→D ¾, D→E ½, D→F ½, E→F ½, F→A 1.
    let (inc, v) = lecture_increments([0.5, 0.5, 0.25, 0.25, 0.75, 0.5, 0.5, 0.5, 1.0, 1.0]);
    // Tree {F→A, C→D, A→C, A→B, D→E} (+ F→EXIT); chords B→C = 2, B→D = 4, D→F = 0, E→F = 1.
    assert_eq!(inc.chords().collect::<Vec<_>>(), vec![d(2), d(3), d(5), d(7)]);
    assert_eq!((v[2], v[3], v[5], v[7]), (2, 4, 0, 1));
    for t in [0, 1, 4, 6, 8, 9] {
        assert!(inc.in_tree(d(t)) && v[t as usize] == 0);
    }
}

#[test]
fn ball_larus_1996_lecture_oracle2_hot_path_increments() {
    // Hot path ABCDEF: A→B .9, A→C .1, B→C .8, B→D .1, C→D .9, D→E .8, D→F .2, E→F .8.
    let (inc, v) = lecture_increments([0.1, 0.9, 0.8, 0.1, 0.9, 0.2, 0.8, 0.8, 1.0, 1.0]);
    // Tree {F→A, A→B, C→D, B→C, D→E}; chords A→C = −2, B→D = 2, D→F = 2, E→F = 3.
    assert_eq!(inc.chords().collect::<Vec<_>>(), vec![d(0), d(3), d(5), d(7)]);
    assert_eq!((v[0], v[3], v[5], v[7]), (-2, 2, 2, 3));
    // The hottest path crosses a single chord (E→F).
    let hot = lecture_path(&[A, B, C, D, E, F]);
    assert_eq!(hot.iter().filter(|&&e| inc.is_chord(e)).count(), 1);
}

#[test]
fn ball_larus_1996_lecture_instrumented_runs() {
    let cfg = lecture_cfg();
    let dag = dag_of(&cfg);
    let n = Numbering::compute(&dag).unwrap();
    let inc = Increments::compute(&dag, &n, &[0.5, 0.5, 0.25, 0.25, 0.75, 0.5, 0.5, 0.5, 1.0, 1.0], &[]).unwrap();
    check_simulation(&cfg, &dag, &n, &inc, 7, 50);
}

#[test]
fn ball_larus_1996_all_spanning_trees_with_exit_to_entry_encode_exactly() {
    // Notes C.3: every spanning tree containing EXIT→ENTRY gives exact encodings; without it, from_tree refuses.
    let dag = dag_of(&lecture_cfg());
    let n = Numbering::compute(&dag).unwrap();
    let paths = enumerate_paths(&dag, 10).unwrap();
    let m = dag.num_edges();
    let mut trees = 0;
    for mask in 0u32..(1 << m) {
        if mask.count_ones() != 6 {
            continue;
        }
        let in_tree: Vec<bool> = (0..m).map(|i| mask & (1 << i) != 0).collect();
        match Increments::from_tree(&dag, &n, in_tree) {
            Ok(inc) => {
                trees += 1;
                for p in &paths {
                    assert_eq!(inc_sum(&inc, p), val_sum(&n, p) as i128);
                }
            }
            Err(IncrementError::TreeCycle { .. }) | Err(IncrementError::ExitToEntryNotInTree) => {}
            Err(e) => panic!("{e}"),
        }
    }
    // Trees with F→EXIT are the lecture's 40 trees through F→A; trees without it hang EXIT off A and span the
    // lecture graph without F→A (the notes' other 24 trees): 64 in all.
    assert_eq!(trees, 64);
}
