//! Paper oracles for slicing: Ball's thesis Ex. 8 (notes/ball-1993-thesis.md) — Fig. 5.4, the break example of
//! Figs. 6.1/6.4, Lyle's and Gallagher's examples, minimality (§6.3), Choi–Ferrante, and Fig. 6.6 — with the
//! slices written as the thesis prints them and every dependence derived by hand from the definitions (§5.2).

use super::lang::{cfg_succ, parse, project, run, show, translate, Translated, Translation};
use super::program::{Label, ProgramGraph, StmtId, Vertex};
use super::slice::{eliminate, Pdg, Slice};

const ENTRY: StmtId = ProgramGraph::ENTRY;
const EXIT: StmtId = ProgramGraph::EXIT;

struct Sliced {
    t: Translated,
    pdg: Pdg,
    slice: Slice,
    text: String,
}

/// Slice(P, c) under `mode`: the kept vertices and the projected program as text.
fn slice_on(src: &str, criterion: &str, mode: Translation) -> Sliced {
    let prog = parse(src);
    assert_eq!(show(&prog), src, "the source is written as the printer prints it");
    let t = translate(&prog, mode);
    let pdg = Pdg::build(&t.g).unwrap();
    let slice = pdg.slice(&[t.v(criterion)]);
    let text = show(&project(&prog, &t, &|v| slice.contains(v)));
    Sliced { t, pdg, slice, text }
}

fn texts(t: &Translated, vs: impl IntoIterator<Item = StmtId>) -> Vec<String> {
    let mut out: Vec<String> = vs.into_iter().map(|v| t.text[v.index()].clone()).collect();
    out.sort();
    out
}

/// The value sequence of `criterion` when the full program runs, and when the slice's CFG runs.
fn values(s: &Sliced, criterion: &str, input: &[(&str, i64)]) -> (Vec<i64>, Vec<i64>) {
    let c = s.t.v(criterion).index();
    let full = run(&s.t, input, &cfg_succ(&s.t.g), 10_000).unwrap();
    let sliced = run(&s.t, input, &|v, l| s.slice.successor(v, l), 10_000).unwrap();
    (full[c].clone(), sliced[c].clone())
}

#[test]
fn thesis_fig_5_4_slice_on_output_prod() {
    let src = "sum:=0; prod:=1; i:=0; while i<N do i:=i+1; sum:=sum+i; prod:=prod*i od; output(sum); output(prod)";
    let s = slice_on(src, "output(prod)", Translation::Augmented);
    assert_eq!(s.text, "prod:=1; i:=0; while i<N do i:=i+1; prod:=prod*i od; output(prod)");
    for n in 0..6 {
        let fact: i64 = (1..=n).product();
        assert_eq!(values(&s, "output(prod)", &[("N", n)]), (vec![fact], vec![fact]));
    }
    // The slice's CFG: prod:=prod*i now continues at the loop predicate, i:=0 at the loop predicate.
    assert_eq!(s.slice.successor(s.t.v("prod:=prod*i"), Label::TRUE), Some(s.t.v("while i<N")));
    assert_eq!(s.slice.successor(s.t.v("while i<N"), Label::FALSE), Some(s.t.v("output(prod)")));
    assert_eq!(s.slice.successor(ENTRY, Label::TRUE), Some(s.t.v("prod:=1")));
}

/// Figs. 6.1/6.4. The figure's program is not in the text; this one has the properties the text pins down: the
/// break sits in the loop behind a guard on MAXINT, and (derived by hand on the augmented CFG) ipd(break) =
/// output(sum) while its dummy arc leads to sum:=sum+i → prod:=prod*i → while, whose ipd is output(sum) too; so
/// break →c^F exactly {sum:=sum+i, prod:=prod*i, while i<N} and nothing outside the loop.
const BREAK_EXAMPLE: &str = "sum:=0; prod:=1; i:=0; while i<N do i:=i+1; if prod>MAXINT then break fi; sum:=sum+i; \
                             prod:=prod*i od; output(sum); output(prod)";

#[test]
fn thesis_fig_6_4_break_controls_exactly_sum_prod_and_the_loop_predicate() {
    let s = slice_on(BREAK_EXAMPLE, "output(prod)", Translation::Augmented);
    let brk = s.t.v("break");
    assert_eq!(
        texts(&s.t, s.pdg.cd.children(brk).iter().map(|&(_, w)| w)),
        ["prod:=prod*i", "sum:=sum+i", "while i<N"]
    );
    assert!(s.pdg.cd.children(brk).iter().all(|&(l, _)| l == Label::FALSE));
    assert_eq!(s.pdg.pd.ipd(brk), Some(s.t.v("output(sum)")));
}

#[test]
fn thesis_fig_6_1_e_slice_on_output_prod_keeps_the_break() {
    let s = slice_on(BREAK_EXAMPLE, "output(prod)", Translation::Augmented);
    assert_eq!(
        s.text,
        "prod:=1; i:=0; while i<N do i:=i+1; if prod>MAXINT then break fi; prod:=prod*i od; output(prod)"
    );
    // N=5, MAXINT=10: prod runs 1, 2, 6, 24; at i=5, 24>10 breaks: output 24 (by hand).
    assert_eq!(values(&s, "output(prod)", &[("N", 5), ("MAXINT", 10)]), (vec![24], vec![24]));
    assert_eq!(values(&s, "output(prod)", &[("N", 5), ("MAXINT", 1000)]), (vec![120], vec![120]));
}

#[test]
fn thesis_fig_6_1_d_ottenstein_slice_of_the_standard_cfg_drops_the_break_and_is_wrong() {
    let s = slice_on(BREAK_EXAMPLE, "output(prod)", Translation::Standard);
    assert_eq!(s.text, "prod:=1; i:=0; while i<N do i:=i+1; if prod>MAXINT then fi; prod:=prod*i od; output(prod)");
    // Run the projection: without the break it goes on to i=5 and outputs 120 where the program outputs 24.
    let proj = parse(&s.text);
    let t = translate(&proj, Translation::Augmented);
    let out = run(&t, &[("N", 5), ("MAXINT", 10)], &cfg_succ(&t.g), 10_000).unwrap();
    assert_eq!(out[t.v("output(prod)").index()], vec![120]);
    let full = run(&s.t, &[("N", 5), ("MAXINT", 10)], &cfg_succ(&s.t.g), 10_000).unwrap();
    assert_eq!(full[s.t.v("output(prod)").index()], vec![24]);
}

#[test]
fn thesis_lyle_example_slice_on_y_is_x_1_y_x() {
    let src = "x:=1; i:=1; while i<M do if i=N then goto L fi; i:=i+1 od; L: y:=x";
    let s = slice_on(src, "y:=x", Translation::Augmented);
    assert_eq!(s.text, "x:=1; y:=x");
    assert_eq!(texts(&s.t, s.slice.kept()), ["ENTRY", "EXIT", "x:=1", "y:=x"]);
    // y:=x postdominates every vertex: it depends on ENTRY alone.
    assert_eq!(s.pdg.cd.parents(s.t.v("y:=x")), &[(ENTRY, Label::TRUE)]);
    assert_eq!(s.slice.successor(s.t.v("x:=1"), Label::TRUE), Some(s.t.v("y:=x")));
}

#[test]
fn thesis_gallagher_counterexample_keeps_the_goto_and_its_label() {
    let src = "if P then goto L fi; x:=1; y:=x+1; L: a:=2";
    let s = slice_on(src, "y:=x+1", Translation::Augmented);
    assert_eq!(s.text, "if P then goto L fi; x:=1; y:=x+1; L:");
    // goto →c^F {x:=1, y:=x+1} (its dummy arc; ipd(goto) = a:=2); if P →c^T goto.
    let goto = s.t.v("goto L");
    assert_eq!(texts(&s.t, s.pdg.cd.children(goto).iter().map(|&(_, w)| w)), ["x:=1", "y:=x+1"]);
    let if_p = s.pdg.cd.children(s.t.v("if P"));
    assert_eq!(if_p.iter().filter(|&&(l, _)| l == Label::TRUE).collect::<Vec<_>>(), [&(Label::TRUE, goto)]);
    let on_false = if_p.iter().filter(|&&(l, _)| l == Label::FALSE).map(|&(_, w)| w);
    assert_eq!(texts(&s.t, on_false), ["x:=1", "y:=x+1"]);
    // In the slice the goto jumps to EXIT (a:=2 is gone).
    assert_eq!(s.slice.successor(goto, Label::TRUE), Some(EXIT));
    for p in [0, 1] {
        let expect = if p == 0 { vec![2] } else { vec![] };
        assert_eq!(values(&s, "y:=x+1", &[("P", p)]), (expect.clone(), expect));
    }
    // Gallagher's projection drops the goto: y:=x+1 then runs although P is true.
    let wrong = show(&project(&parse(src), &s.t, &|v| s.slice.contains(v) && v != goto));
    assert_eq!(wrong, "if P then fi; x:=1; y:=x+1");
    let t = translate(&parse(&wrong), Translation::Augmented);
    let out = run(&t, &[("P", 1)], &cfg_succ(&t.g), 100).unwrap();
    assert_eq!(out[t.v("y:=x+1").index()], vec![2]);
}

#[test]
fn thesis_6_3_minimality_augmented_slice_on_c_is_y() {
    let x = "if P then if Q then A; goto L fi; B; goto L fi; C; L: D";
    let s = slice_on(x, "C", Translation::Augmented);
    assert_eq!(s.text, "if P then if Q then goto L fi; goto L fi; C; L:");
    assert_eq!(s.t.vs("goto L").len(), 2);
    assert!(s.t.vs("goto L").into_iter().all(|g| s.slice.contains(g)));
    assert_eq!(texts(&s.t, s.slice.kept()), ["C", "ENTRY", "EXIT", "goto L", "goto L", "if P", "if Q"]);
    // Under the augmented translation C is (transitively) control dependent on Q: if Q →c^F goto(2nd) →c^F C.
    assert!(s.pdg.cd.trans_cd(s.t.v("if Q")).contains(&s.t.v("C")));
    // Under the standard translation it is not: Q reaches only A, B and D, and ipd(Q) = D.
    let std = slice_on(x, "C", Translation::Standard);
    assert!(!std.pdg.cd.trans_cd(std.t.v("if Q")).contains(&std.t.v("C")));
    assert_eq!(std.pdg.cd.parents(std.t.v("C")), &[(std.t.v("if P"), Label::FALSE)]);
    assert_eq!(texts(&std.t, std.pdg.cd.trans_cd(std.t.v("if Q"))), ["A", "B", "if Q"]);
}

#[test]
fn thesis_choi_ferrante_b_depends_on_q_only_in_the_goto_encoding() {
    let structured = slice_on("if P then A; if Q then halt fi else B fi; C", "B", Translation::Augmented);
    let (t, q, b) = (&structured.t, structured.t.v("if Q"), structured.t.v("B"));
    assert!(!structured.pdg.cd.trans_cd(q).contains(&b));
    assert!(!structured.slice.contains(q));
    assert_eq!(texts(t, structured.slice.kept()), ["B", "ENTRY", "EXIT", "if P"]);
    assert_eq!(structured.text, "if P then else B fi");

    let gotos = slice_on(
        "if not(P) then goto 1 fi; A; if Q then goto 3 fi; goto 2; 1: B; 2: C; 3:",
        "B",
        Translation::Augmented,
    );
    let (t, q, b) = (&gotos.t, gotos.t.v("if Q"), gotos.t.v("B"));
    // if Q →c^F goto 2 (ipd(Q) = EXIT), goto 2 →c^F B (its dummy arc; ipd(goto 2) = C).
    assert!(gotos.pdg.cd.depends(q, t.v("goto 2")));
    assert!(gotos.pdg.cd.depends(t.v("goto 2"), b));
    assert!(gotos.pdg.cd.trans_cd(q).contains(&b));
    assert!(gotos.slice.contains(q));
}

#[test]
fn thesis_fig_6_6_path_projections() {
    let g_src = "if x>0 then y:=1 else y:=0 fi; output(y); output(x)";
    let s = slice_on(g_src, "output(y)", Translation::Augmented);
    let t = &s.t;
    // G has the path (Entry, T, x>0, F, y:=0, null, output(y), null, output(x), null, Exit).
    let succ = cfg_succ(&t.g);
    let path = [ENTRY, t.v("if x>0"), t.v("y:=0"), t.v("output(y)"), t.v("output(x)"), EXIT];
    let labels = [Label::TRUE, Label::FALSE, Label::TRUE, Label::TRUE, Label::TRUE];
    for i in 0..labels.len() {
        assert_eq!(succ(path[i], labels[i]), Some(path[i + 1]));
    }
    assert_eq!(s.text, "if x>0 then y:=1 else y:=0 fi; output(y)");
    assert_eq!(slice_on(g_src, "output(x)", Translation::Augmented).text, "output(x)");
    // J keeps output(y) without y:=1, but G induces y:=1 →f output(y): J is no flow/path-projection.
    assert!(s.pdg.flow.preds(t.v("output(y)")).contains(&t.v("y:=1")));
    // Eliminating (x>0) alone leaves ENTRY with two T-successors (Lemma 6.4's example): not a CFG.
    let mut kept = vec![true; t.g.num_vertices()];
    kept[t.v("if x>0").index()] = false;
    let err = eliminate(&t.g, &s.pdg.pd, &kept).unwrap_err();
    assert_eq!((err.vertex, err.label), (ENTRY, Label::TRUE));
    assert_eq!(texts(t, err.targets), ["y:=0", "y:=1"]);
}

#[test]
fn infinite_loop_header_gets_the_virtual_exit_arc() {
    // ENTRY -> a -> b -> c -> d -> c, d -> b (no way out): outer header b gets the arc, inner header c none.
    let mut g = ProgramGraph::new();
    let [a, b, c, d] = [(); 4].map(|_| g.add_vertex(Vertex::default()));
    g.add_arc(ENTRY, Label::TRUE, a, false);
    g.add_arc(a, Label::TRUE, b, false);
    g.add_arc(b, Label::TRUE, c, false);
    g.add_arc(c, Label::TRUE, d, false);
    g.add_arc(d, Label::TRUE, c, false);
    g.add_arc(d, Label::FALSE, b, false);
    let pdg = Pdg::build(&g).unwrap();
    assert_eq!(pdg.pd.virtual_exits(), &[b]);
    assert_eq!([a, b, c, d].map(|v| pdg.pd.ipd(v)), [Some(b), Some(EXIT), Some(d), Some(b)]);
    // b postdominates its own T-branch (every way out is its virtual arc) but not itself: b →c^T {b, c, d};
    // d -T-> c with ipd(d) = b: d →c^T {c, d}; nothing depends on the never-taken arc.
    assert_eq!(pdg.cd.children(b), &[(Label::TRUE, b), (Label::TRUE, c), (Label::TRUE, d)]);
    assert_eq!(pdg.cd.children(d), &[(Label::TRUE, c), (Label::TRUE, d)]);
    assert_eq!(pdg.cd.parents(b), &[(ENTRY, Label::TRUE), (b, Label::TRUE)]);
}

#[test]
fn bad_graphs_are_errors_not_panics() {
    use super::program::ProgramGraphError as E;
    let mut g = ProgramGraph::new();
    let a = g.add_vertex(Vertex::default());
    g.add_arc(ENTRY, Label::TRUE, a, false);
    assert_eq!(Pdg::build(&g).unwrap_err(), E::NoSuccessor(a));
    g.add_arc(a, Label::TRUE, EXIT, false);
    g.add_arc(a, Label::TRUE, a, false);
    assert_eq!(Pdg::build(&g).unwrap_err(), E::DuplicateLabel(a, Label::TRUE));
    let mut h = ProgramGraph::new();
    h.add_arc(ENTRY, Label::TRUE, StmtId(7), false);
    assert_eq!(Pdg::build(&h).unwrap_err(), E::NoSuchVertex(StmtId(7)));
    let mut k = ProgramGraph::new();
    k.add_arc(EXIT, Label::TRUE, ENTRY, false);
    assert!(matches!(Pdg::build(&k).unwrap_err(), E::BadEndpoint { .. }));
}
