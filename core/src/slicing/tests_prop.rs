//! Property tests. (1) Postdominators and control dependence against their definitions, by removal and
//! reachability, on random labelled graphs (dummy arcs, infinite loops, unreachable vertices). (2) Slicing on
//! random goto-structured programs: for every criterion and several inputs, the slice's CFG, run, computes at
//! every kept vertex the value sequence the program computes (thesis Theorem 6.1); its CFG is the vertex
//! elimination by definition; and the program projection (Fig. 6.2), re-translated and run, agrees too (§6.2.3).

use super::control::ControlDeps;
use super::lang::{cfg_succ, number, project, run, translate, Expr, Kind, Sem, Stmt, Translation};
use super::postdom::Postdominators;
use super::program::{Label, ProgramGraph, StmtId, Vertex};
use super::slice::{eliminate, Pdg};
use crate::test_rng::Rng;
use proptest::prelude::*;

// ---------------------------------------------------------------- (1) postdominance by definition

/// Random labelled graphs: `n` statements, each with 1..=3 arcs (the first executable, others dummy at random)
/// to random vertices or EXIT; ENTRY -T-> a random vertex. Cycles without exits and unreachable vertices occur.
fn random_graph() -> impl Strategy<Value = ProgramGraph> {
    (1usize..10)
        .prop_flat_map(|n| {
            let arcs = (1usize..=3, prop::collection::vec(0..=n, 3), prop::collection::vec(any::<bool>(), 3));
            (Just(n), prop::collection::vec(arcs, n), 0..n)
        })
        .prop_map(|(n, arcs, first)| {
            let mut g = ProgramGraph::new();
            let id = |t: usize| if t == n { ProgramGraph::EXIT } else { StmtId::from_index(t + 2) };
            for _ in 0..n {
                g.add_vertex(Vertex::default());
            }
            g.add_arc(ProgramGraph::ENTRY, Label::TRUE, id(first), false);
            for (i, (k, to, dummy)) in arcs.into_iter().enumerate() {
                for j in 0..k {
                    g.add_arc(id(i), Label(j as u32), id(to[j]), j > 0 && dummy[j]);
                }
            }
            g
        })
}

/// Successor lists with the virtual exit arcs.
fn successors(g: &ProgramGraph, pd: &Postdominators) -> Vec<Vec<StmtId>> {
    let mut next = vec![Vec::new(); g.num_vertices()];
    for a in g.arcs() {
        next[a.from.index()].push(a.to);
    }
    for (h, _, x) in pd.virtual_arcs() {
        next[h.index()].push(x);
    }
    next
}

/// Whether some path from `v` reaches `to` without passing through `avoid`.
fn reaches(next: &[Vec<StmtId>], v: StmtId, to: StmtId, avoid: Option<StmtId>) -> bool {
    let mut seen = vec![false; next.len()];
    let mut work = vec![v];
    seen[v.index()] = true;
    while let Some(x) = work.pop() {
        if x == to {
            return true;
        }
        for &y in &next[x.index()] {
            if !seen[y.index()] && Some(y) != avoid {
                seen[y.index()] = true;
                work.push(y);
            }
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn postdominators_and_control_dependence_meet_their_definitions(g in random_graph()) {
        let pd = Postdominators::compute(&g);
        let cd = ControlDeps::compute(&g, &pd);
        let next = successors(&g, &pd);
        let exit = ProgramGraph::EXIT;
        let vs: Vec<StmtId> = g.vertex_ids().collect();
        // With the virtual arcs every vertex ENTRY reaches reaches EXIT.
        for &v in &vs {
            let reached = reaches(&next, ProgramGraph::ENTRY, v, None);
            prop_assert!(!reached || reaches(&next, v, exit, None), "{v} is stranded");
            prop_assert_eq!(pd.reaches_exit(v), reaches(&next, v, exit, None), "{}", v);
        }
        // w pd v iff w != v and every path from v to EXIT passes w (EXIT unreachable once w is removed).
        let brute_pd = |w: StmtId, v: StmtId| {
            w != v && v != exit && reaches(&next, v, exit, None) && (w == exit || !reaches(&next, v, exit, Some(w)))
        };
        for &v in &vs {
            for &w in &vs {
                prop_assert_eq!(pd.postdominates(w, v), brute_pd(w, v), "{} pd {}", w, v);
            }
        }
        // v →c^L w iff w postdominates the L-branch of v (is its L-successor or postdominates it) and not v —
        // among the vertices with a path to EXIT (the others are never executed and depend on nothing).
        let mut expected = 0;
        for a in g.arcs() {
            if !pd.reaches_exit(a.from) {
                continue;
            }
            for &w in &vs {
                let dep = w != exit && reaches(&next, w, exit, None) && (w == a.to || brute_pd(w, a.to)) && !brute_pd(w, a.from);
                prop_assert_eq!(cd.parents(w).contains(&(a.from, a.label)), dep, "{} -{:?}-> {}: {}", a.from, a.label, a.to, w);
                expected += usize::from(dep);
            }
        }
        prop_assert_eq!(vs.iter().map(|&w| cd.parents(w).len()).sum::<usize>(), expected);
    }
}

// ---------------------------------------------------------------- (2) slices run like the program

/// Random goto-structured programs that terminate on every input: each loop has its own counter, reset just
/// before the loop and incremented first thing in its body, bounded by an input (0..4) or a constant; every goto
/// to an earlier label is guarded by a counter that is never reset (`if gK<2 then gK:=gK+1; goto L fi`).
/// Forward gotos (out of and into loops), breaks, continues and halts are free.
struct Gen {
    rng: Rng,
    budget: i32,
    labels: usize,
    counters: usize,
}

const DATA: [&str; 3] = ["a", "b", "c"];
const INPUTS: [&str; 2] = ["n0", "n1"];

fn var(x: &str) -> Expr {
    Expr::Var(x.to_string())
}
fn bin(op: char, a: Expr, b: Expr) -> Expr {
    Expr::Bin(op, Box::new(a), Box::new(b))
}
fn st(kind: Kind) -> Stmt {
    Stmt { id: 0, kind }
}

impl Gen {
    fn operand(&mut self) -> Expr {
        match self.rng.below(4) {
            0 => Expr::Const(self.rng.below(4) as i64),
            1 => var(INPUTS[self.rng.below(2)]),
            _ => var(DATA[self.rng.below(3)]),
        }
    }
    fn expr(&mut self) -> Expr {
        match self.rng.below(5) {
            0 | 1 => self.operand(),
            2 => bin('%', self.operand(), Expr::Const(1 + self.rng.below(3) as i64)),
            op => {
                let (a, b) = (self.operand(), self.operand());
                bin(if op == 3 { '+' } else { ['-', '*'][self.rng.below(2)] }, a, b)
            }
        }
    }
    fn pred(&mut self) -> Expr {
        let e = bin(['<', '>', '='][self.rng.below(3)], self.operand(), self.operand());
        if self.rng.chance(5) {
            Expr::Not(Box::new(e))
        } else {
            e
        }
    }
    fn bound(&mut self) -> Expr {
        if self.rng.chance(3) {
            Expr::Const(1 + self.rng.below(2) as i64)
        } else {
            var(INPUTS[self.rng.below(2)])
        }
    }
    fn seq(&mut self, depth: usize, in_loop: bool) -> Vec<Stmt> {
        let mut out = Vec::new();
        let len = 1 + self.rng.below(4);
        for _ in 0..len {
            if self.budget <= 0 {
                break;
            }
            self.stmt(depth, in_loop, &mut out);
        }
        out
    }
    fn stmt(&mut self, depth: usize, in_loop: bool, out: &mut Vec<Stmt>) {
        self.budget -= 1;
        let r = self.rng.below(100);
        let nest = depth < 3;
        let kind = match r {
            0..=27 => Kind::Assign(DATA[self.rng.below(3)].to_string(), self.expr()),
            28..=35 => Kind::Output(self.expr()),
            36..=47 if nest => {
                let (e, a) = (self.pred(), self.seq(depth + 1, in_loop));
                let b = if self.rng.chance(2) { self.seq(depth + 1, in_loop) } else { Vec::new() };
                Kind::If(e, a, b)
            }
            48..=61 if nest => {
                let c = format!("c{}", self.counters);
                self.counters += 1;
                out.push(st(Kind::Assign(c.clone(), Expr::Const(0))));
                let mut body = vec![st(Kind::Assign(c.clone(), bin('+', var(&c), Expr::Const(1))))];
                body.extend(self.seq(depth + 1, true));
                let bound = self.bound();
                if self.rng.chance(2) {
                    Kind::While(bin('<', var(&c), bound), body)
                } else {
                    Kind::Repeat(body, bin('>', var(&c), bound))
                }
            }
            62..=71 => {
                self.labels += 1;
                Kind::Label(format!("L{}", self.labels - 1))
            }
            72..=83 => Kind::Goto(String::new()),
            84..=95 if in_loop => [Kind::Break, Kind::Continue][self.rng.below(2)].clone(),
            96..=97 => Kind::Halt,
            _ => Kind::Assign(DATA[self.rng.below(3)].to_string(), self.expr()),
        };
        out.push(st(kind));
    }
}

/// Points every goto at a random label, guarding the backward ones (see [`Gen`]).
fn resolve_gotos(prog: &mut Vec<Stmt>, rng: &mut Rng, labels: &mut usize) {
    fn label_ids(seq: &[Stmt], out: &mut Vec<(String, usize)>) {
        for s in seq {
            match &s.kind {
                Kind::Label(l) => out.push((l.clone(), s.id)),
                Kind::If(_, a, b) => {
                    label_ids(a, out);
                    label_ids(b, out);
                }
                Kind::While(_, b) | Kind::Repeat(b, _) => label_ids(b, out),
                _ => {}
            }
        }
    }
    fn rewrite(seq: &mut [Stmt], labels: &[(String, usize)], rng: &mut Rng, guards: &mut usize) {
        for s in seq {
            match &mut s.kind {
                Kind::Goto(l) if l.is_empty() => {
                    let (name, at) = labels[rng.below(labels.len())].clone();
                    if at < s.id {
                        let g = format!("g{guards}");
                        *guards += 1;
                        let body =
                            vec![st(Kind::Assign(g.clone(), bin('+', var(&g), Expr::Const(1)))), st(Kind::Goto(name))];
                        s.kind = Kind::If(bin('<', var(&g), Expr::Const(2)), body, Vec::new());
                    } else {
                        *l = name;
                    }
                }
                Kind::If(_, a, b) => {
                    rewrite(a, labels, rng, guards);
                    rewrite(b, labels, rng, guards);
                }
                Kind::While(_, b) | Kind::Repeat(b, _) => rewrite(b, labels, rng, guards),
                _ => {}
            }
        }
    }
    if *labels == 0 {
        prog.push(st(Kind::Label("L0".into())));
        *labels = 1;
    }
    number(prog, &mut 0);
    let mut ls = Vec::new();
    label_ids(prog, &mut ls);
    rewrite(prog, &ls, rng, &mut 0);
    number(prog, &mut 0);
}

pub(super) fn random_program(seed: u64, size: i32) -> Vec<Stmt> {
    let mut gen = Gen { rng: Rng::new(seed), budget: size, labels: 0, counters: 0 };
    let mut prog = gen.seq(0, false);
    while gen.budget > 0 {
        gen.stmt(0, false, &mut prog);
    }
    let mut labels = gen.labels;
    resolve_gotos(&mut prog, &mut gen.rng, &mut labels);
    prog
}

pub(super) const FUEL: usize = 200_000;

/// What one program's check covered.
#[derive(Default, Debug)]
struct Coverage {
    slices: usize,
    smaller: usize,
    kept_vertices: usize,
    vertices: usize,
    kept_jumps: usize,
    dropped_jumps: usize,
    runs: usize,
}

/// Checks every criterion of `prog` on `inputs`; returns what was covered, or the first disagreement.
fn check_program(prog: &[Stmt], inputs: &[Vec<(&str, i64)>]) -> Result<Coverage, String> {
    let t = translate(prog, Translation::Augmented);
    let pdg = Pdg::build(&t.g).map_err(|e| e.to_string())?;
    let full: Vec<Vec<Vec<i64>>> = inputs
        .iter()
        .map(|i| run(&t, i, &cfg_succ(&t.g), FUEL).ok_or_else(|| format!("program does not terminate on {i:?}")))
        .collect::<Result<_, _>>()?;
    let mut cov = Coverage::default();
    let criteria: Vec<StmtId> = t.g.vertex_ids().filter(|v| t.stmt_of[v.index()].is_some()).collect();
    for &c in &criteria {
        let slice = pdg.slice(&[c]);
        let kept: Vec<bool> = t.g.vertex_ids().map(|v| slice.contains(v)).collect();
        cov.slices += 1;
        cov.smaller += usize::from(slice.len() < t.g.num_vertices());
        cov.kept_vertices += slice.len();
        cov.vertices += t.g.num_vertices();
        for v in t.g.vertex_ids().filter(|v| matches!(t.sem[v.index()], Sem::Jump)) {
            if slice.contains(v) {
                cov.kept_jumps += 1;
            } else {
                cov.dropped_jumps += 1;
            }
        }
        // The slice's CFG is vertex elimination by definition.
        let elim = eliminate(&t.g, &pdg.pd, &kept).map_err(|e| format!("criterion {}: {e}", t.text[c.index()]))?;
        for v in slice.kept() {
            if elim[v.index()] != slice.successors(v) {
                return Err(format!(
                    "{}: successors {:?} vs elimination {:?}",
                    t.text[v.index()],
                    slice.successors(v),
                    elim[v.index()]
                ));
            }
        }
        // The projected program, re-translated.
        let proj = project(prog, &t, &|v| slice.contains(v));
        let tp = translate(&proj, Translation::Augmented);
        for (input, full) in inputs.iter().zip(&full) {
            let sliced = run(&t, input, &|v, l| slice.successor(v, l), FUEL).ok_or("slice does not terminate")?;
            let reprog = run(&tp, input, &cfg_succ(&tp.g), FUEL).ok_or("projection does not terminate")?;
            cov.runs += 1;
            for v in slice.kept().filter(|v| t.stmt_of[v.index()].is_some()) {
                let (want, got) = (&full[v.index()], &sliced[v.index()]);
                if want != got {
                    return Err(format!(
                        "criterion {}, input {input:?}: {} computes {want:?} in the program but {got:?} in the slice",
                        t.text[c.index()],
                        t.text[v.index()]
                    ));
                }
                let w = tp.vert[&t.stmt_of[v.index()].unwrap()];
                if &reprog[w.index()] != want {
                    return Err(format!(
                        "criterion {}: projection differs at {}",
                        t.text[c.index()],
                        t.text[v.index()]
                    ));
                }
            }
        }
    }
    Ok(cov)
}

pub(super) fn inputs(rng: &mut Rng, k: usize) -> Vec<Vec<(&'static str, i64)>> {
    (0..k)
        .map(|_| {
            let mut i: Vec<(&str, i64)> = INPUTS.iter().map(|&n| (n, rng.below(4) as i64)).collect();
            i.extend(DATA.iter().map(|&x| (x, rng.below(6) as i64 - 2)));
            i
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn slices_compute_the_programs_values_on_random_goto_programs(seed in any::<u64>(), size in 4i32..28) {
        let prog = random_program(seed, size);
        let mut rng = Rng::new(seed ^ 0xABCD);
        let ins = inputs(&mut rng, 4);
        if let Err(e) = check_program(&prog, &ins) {
            prop_assert!(false, "{}\nprogram: {}", e, super::lang::show(&prog));
        }
    }
}

/// The generator is not vacuous: over fixed seeds, slices drop vertices, keep jumps and drop jumps.
#[test]
fn random_programs_cover_kept_and_dropped_jumps() {
    let mut total = Coverage::default();
    for seed in 0..200u64 {
        let prog = random_program(seed, 20);
        let ins = inputs(&mut Rng::new(seed), 3);
        let c = check_program(&prog, &ins).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", super::lang::show(&prog)));
        total.slices += c.slices;
        total.smaller += c.smaller;
        total.kept_vertices += c.kept_vertices;
        total.vertices += c.vertices;
        total.kept_jumps += c.kept_jumps;
        total.dropped_jumps += c.dropped_jumps;
        total.runs += c.runs;
    }
    eprintln!("{total:?}\nexample: {}", super::lang::show(&random_program(7, 20)));
    assert!(total.smaller * 2 > total.slices, "{total:?}");
    assert!(total.kept_jumps > 1000 && total.dropped_jumps > 1000, "{total:?}");
}
