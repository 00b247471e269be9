//! Paper oracles: the pow/main example of Melski & Reps, "Interprocedural Path Profiling" (University of
//! Wisconsin–Madison CS TR-1382, 1998), Figs. 4–9 and 14–17, rebuilt here graph by graph, and a fact(3)
//! recursion oracle (not in the TR) derived by hand with the TR's rules.
//!
//! The successor orders are the ones forced by the ρ values the paper prints (the first-listed successor has
//! ρ = ⟨0,0⟩); the path numbers and profiles depend on them.

use super::*;
use crate::graph::{test_cfg, BlockId, EdgeId};
use std::collections::BTreeMap;

const MAIN: ProcId = ProcId(0);
const POW: ProcId = ProcId(1);

/// Fig. 4/5: main = v1..v13, v15 (blocks 0..13), Exit_main = v16 (EXIT 14); pow = u1, u2, u3, u4, u5, u7
/// (blocks 0..5), Exit_pow = u8 (EXIT 6). GExit = v14/u6 and GEntry = v17/u9 are virtual.
fn pow_program() -> Program {
    let main = test_cfg(
        14,
        &[
            (0, 1),   // e0  v1→v2
            (1, 2),   // e1  v2→v3
            (2, 3),   // e2  v3→v4
            (3, 4),   // e3  v4→v5
            (3, 13),  // e4  v4→v15
            (4, 5),   // e5  v5→v6
            (4, 8),   // e6  v5→v9
            (5, 6),   // e7  v6→v7: call pow (site 1)
            (6, 7),   // e8  v7→v8
            (7, 8),   // e9  v8→v9
            (8, 9),   // e10 v9→v10
            (8, 12),  // e11 v9→v13
            (9, 10),  // e12 v10→v11: call pow (site 2)
            (10, 11), // e13 v11→v12
            (11, 12), // e14 v12→v13
            (12, 3),  // e15 v13→v4: back edge
        ],
        &[13], // e16 v15→v16
    );
    let pow = test_cfg(
        6,
        &[
            (0, 1), // e0 u1→u2
            (1, 2), // e1 u2→u3
            (2, 3), // e2 u3→u4
            (2, 5), // e3 u3→u7
            (3, 4), // e4 u4→u5
            (4, 2), // e5 u5→u3: back edge
        ],
        &[5], // e6 u7→u8
    );
    let call = |b: u32| CallSite { block: BlockId(b), callee: Callee::Proc(POW) };
    Program::new(vec![Procedure::new(main, vec![call(5), call(9)]), Procedure::new(pow, vec![])]).unwrap()
}

const MAIN_NAMES: [&str; 14] =
    ["v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v15"];
const POW_NAMES: [&str; 6] = ["u1", "u2", "u3", "u4", "u5", "u7"];

fn name(p: ProcId, b: BlockId) -> &'static str {
    match p {
        MAIN => MAIN_NAMES.get(b.index()).copied().unwrap_or("v16"),
        _ => POW_NAMES.get(b.index()).copied().unwrap_or("u8"),
    }
}

/// (Exit, GExit, GEntry) of a procedure, in the paper's names.
fn virtuals(p: ProcId) -> (&'static str, &'static str, &'static str) {
    if p == MAIN {
        ("v16", "v14", "v17")
    } else {
        ("u8", "u6", "u9")
    }
}

/// A decoded path in the notation of the notes: "EG v1 v2 … XG".
fn render(program: &Program, path: &InterprocPath) -> String {
    let mut out = vec!["EG"];
    for s in &path.steps {
        match s.via {
            Via::MidEntry { .. } => out.push(virtuals(s.proc).2),
            Via::Return { site, .. } => {
                let Callee::Proc(callee) = program.site(site).unwrap().callee else { panic!("not a direct call") };
                out.push(virtuals(callee).0);
            }
            _ => {}
        }
        out.push(name(s.proc, s.block));
    }
    match path.end {
        PathEnd::RootReturn { proc, .. } => out.push(virtuals(proc).0),
        PathEnd::BackEdge { proc, .. } | PathEnd::Termination { proc, .. } => out.push(virtuals(proc).1),
    }
    out.push("XG");
    out.join(" ")
}

/// Decodes every number, checks the listing, density and the round trip.
fn check_listing(num: &Numbering<'_>, listing: &str) {
    let program = num.supergraph().program();
    let expected: Vec<&str> = listing.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    assert_eq!(num.num_paths(), expected.len() as u128);
    for (n, line) in expected.iter().enumerate() {
        let (label, text) = line.split_once(": ").unwrap();
        assert_eq!(label.trim().parse::<usize>().unwrap(), n);
        let path = decode(num, n as u128).unwrap();
        assert_eq!(render(program, &path), text, "path {n}");
        assert_eq!(encode(num, &path), Ok(n as u128), "round trip of {n}: {path}");
    }
}

/// Fig. 4's execution: i = 1..18; pow(i, 2) iterates its loop twice.
fn pow_execution() -> Execution {
    let e = |i: u32| Event::Edge(EdgeId(i));
    let pow_body = [e(0), e(1), e(2), e(4), e(5), e(2), e(4), e(5), e(3), Event::Return(EdgeId(6))];
    let mut events = vec![e(0), e(1), e(2)];
    for i in 1..=18 {
        events.push(e(3));
        if i % 2 == 0 {
            events.extend([e(5), Event::Call]);
            events.extend(pow_body);
            events.extend([e(8), e(9)]);
        } else {
            events.push(e(6));
        }
        if i % 3 == 0 {
            events.extend([e(10), Event::Call]);
            events.extend(pow_body);
            events.extend([e(13), e(14)]);
        } else {
            events.push(e(11));
        }
        events.push(e(15));
    }
    events.extend([e(4), Event::Return(EdgeId(16))]);
    Execution { root: MAIN, events }
}

fn profile(pairs: &[(u128, u64)]) -> Profile {
    pairs.iter().copied().collect::<BTreeMap<_, _>>()
}

fn l(a: u128, b: u128) -> Linear {
    Linear::new(a, b)
}

/// Every ρ of a procedure that is not ⟨0,0⟩, as (source name, target name, ρ).
fn nonzero_rho(num: &Numbering<'_>, p: ProcId) -> Vec<(String, String, Linear)> {
    let sg = num.supergraph();
    let dag = sg.dag(p);
    let (exit, gexit, gentry) = virtuals(p);
    let target = |a: &OutArc| match a.kind {
        ArcKind::Branch { to, .. } | ArcKind::LoopRestart { to, .. } => name(p, to),
        ArcKind::Return { .. } => exit,
        ArcKind::Termination { .. } | ArcKind::BackEdgeExit { .. } => gexit,
        ArcKind::Call { .. } => "call",
        ArcKind::Summary { ret, .. } => name(p, ret),
    };
    let mut out = Vec::new();
    let sources = dag.topological_order().iter().map(|&v| (name(p, v), num.arcs(p, v)));
    for (src, arcs) in sources.chain([(gentry, num.gentry_arcs(p))]) {
        for a in arcs.iter().filter(|a| !a.rho.is_zero()) {
            out.push((src.to_string(), target(a).to_string(), a.rho));
        }
    }
    out.sort();
    out
}

fn rho_table(rows: &[(&str, &str, Linear)]) -> Vec<(String, String, Linear)> {
    let mut v: Vec<_> = rows.iter().map(|&(a, b, f)| (a.to_string(), b.to_string(), f)).collect();
    v.sort();
    v
}

#[test]
fn melski_reps_1998_fig7_context_psi_rho() {
    let sg = Supergraph::build(pow_program());
    let num = sg.number(Mode::Context).unwrap();
    num.check_invariants().unwrap();
    assert!(sg.calls().roles().iter().all(|&r| r == SiteRole::Interprocedural));
    assert_eq!(sg.calls().roots(), &[MAIN]);
    let psi = |p: ProcId, names: &[&str]| -> Vec<Linear> {
        names.iter().map(|n| num.psi(p, BlockId((0..20).find(|&b| name(p, BlockId(b)) == *n).unwrap()))).collect()
    };
    // pow: u8, u7 = ⟨1,0⟩; u5, u4 = ⟨0,1⟩; u3, u2 = ⟨1,1⟩; u1 = ⟨2,2⟩ ("ψ_u1 = λx.2·x+2").
    assert_eq!(psi(POW, &["u8", "u7"]), vec![l(1, 0); 2]);
    assert_eq!(psi(POW, &["u5", "u4"]), vec![l(0, 1); 2]);
    assert_eq!(psi(POW, &["u3", "u2"]), vec![l(1, 1); 2]);
    assert_eq!(psi(POW, &["u1"]), vec![l(2, 2)]);
    // main (Fig. 9's "+1 from vertex v11", "+5 from vertex v7").
    assert_eq!(psi(MAIN, &["v16", "v15"]), vec![l(1, 0); 2]);
    assert_eq!(psi(MAIN, &["v13", "v12", "v11"]), vec![l(0, 1); 3]);
    assert_eq!(psi(MAIN, &["v10"]), vec![l(0, 4)]);
    assert_eq!(psi(MAIN, &["v9", "v8", "v7"]), vec![l(0, 5); 3]);
    assert_eq!(psi(MAIN, &["v6"]), vec![l(0, 12)]);
    assert_eq!(psi(MAIN, &["v5"]), vec![l(0, 17)]);
    assert_eq!(psi(MAIN, &["v4", "v3", "v2"]), vec![l(1, 17); 3]);
    assert_eq!(psi(MAIN, &["v1"]), vec![l(2, 34)]);
    // Exactly the six non-zero edge functions of the Fig. 7 caption.
    let mut rho = nonzero_rho(&num, MAIN);
    rho.extend(nonzero_rho(&num, POW));
    rho.sort();
    assert_eq!(
        rho,
        rho_table(&[
            ("v1", "v4", l(1, 17)),
            ("v4", "v15", l(0, 17)),
            ("v5", "v9", l(0, 12)),
            ("v9", "v13", l(0, 4)),
            ("u1", "u3", l(1, 1)),
            ("u3", "u7", l(0, 1)),
        ])
    );
    // The call sites pass NVC = ψ_v7(1) = 5 and ψ_v11(1) = 1; Example 3.2: u1→u3 adds 6 after the first call
    // site and 2 after the second; Fig. 6's two copies of pow have 12 and 4 paths.
    let u1_u3 = num.arcs(POW, BlockId(0)).iter().find(|a| matches!(a.kind, ArcKind::LoopRestart { .. })).unwrap();
    assert_eq!((u1_u3.rho.checked_apply(5), u1_u3.rho.checked_apply(1)), (Some(6), Some(2)));
    assert_eq!(
        (num.psi(POW, BlockId(0)).checked_apply(5), num.psi(POW, BlockId(0)).checked_apply(1)),
        (Some(12), Some(4))
    );
    assert_eq!(num.entries(), &[GlobalEntry { kind: EntryKind::Root(MAIN), offset: 0, count: 36 }]);
}

#[test]
fn melski_reps_1998_fig5_36_context_paths() {
    let sg = Supergraph::build(pow_program());
    let num = sg.number(Mode::Context).unwrap();
    check_listing(
        &num,
        "
         0: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u4 u5 u6 XG
         1: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6 XG
         2: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
         3: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u3 u4 u5 u6 XG
         4: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u3 u7 u8 v11 v12 v13 v14 XG
         5: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v13 v14 XG
         6: EG v1 v2 v3 v4 v5 v6 u1 u3 u4 u5 u6 XG
         7: EG v1 v2 v3 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6 XG
         8: EG v1 v2 v3 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
         9: EG v1 v2 v3 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v10 u1 u3 u4 u5 u6 XG
        10: EG v1 v2 v3 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v10 u1 u3 u7 u8 v11 v12 v13 v14 XG
        11: EG v1 v2 v3 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v13 v14 XG
        12: EG v1 v2 v3 v4 v5 v9 v10 u1 u2 u3 u4 u5 u6 XG
        13: EG v1 v2 v3 v4 v5 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
        14: EG v1 v2 v3 v4 v5 v9 v10 u1 u3 u4 u5 u6 XG
        15: EG v1 v2 v3 v4 v5 v9 v10 u1 u3 u7 u8 v11 v12 v13 v14 XG
        16: EG v1 v2 v3 v4 v5 v9 v13 v14 XG
        17: EG v1 v2 v3 v4 v15 v16 XG
        18: EG v1 v4 v5 v6 u1 u2 u3 u4 u5 u6 XG
        19: EG v1 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6 XG
        20: EG v1 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
        21: EG v1 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u3 u4 u5 u6 XG
        22: EG v1 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u3 u7 u8 v11 v12 v13 v14 XG
        23: EG v1 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v13 v14 XG
        24: EG v1 v4 v5 v6 u1 u3 u4 u5 u6 XG
        25: EG v1 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6 XG
        26: EG v1 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
        27: EG v1 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v10 u1 u3 u4 u5 u6 XG
        28: EG v1 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v10 u1 u3 u7 u8 v11 v12 v13 v14 XG
        29: EG v1 v4 v5 v6 u1 u3 u7 u8 v7 v8 v9 v13 v14 XG
        30: EG v1 v4 v5 v9 v10 u1 u2 u3 u4 u5 u6 XG
        31: EG v1 v4 v5 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
        32: EG v1 v4 v5 v9 v10 u1 u3 u4 u5 u6 XG
        33: EG v1 v4 v5 v9 v10 u1 u3 u7 u8 v11 v12 v13 v14 XG
        34: EG v1 v4 v5 v9 v13 v14 XG
        35: EG v1 v4 v15 v16 XG
        ",
    );
    // §3.3's example path, Entry_global→v1→v4→v5→v9→v10→u1→u3→u4→u5→u6→Exit_global, is number 32; its
    // context-prefix is EG v1 v4 v5 v9 v10 u1 (up to the last surrogate u1→u3), its active suffix u3 u4 u5.
    let p32 = decode(&num, 32).unwrap();
    assert_eq!(p32.context_prefix_len(), 6);
    assert_eq!(p32.active_suffix().iter().map(|s| name(s.proc, s.block)).collect::<Vec<_>>(), ["u3", "u4", "u5"]);
    assert!(matches!(p32.steps[1].via, Via::LoopRestart { back: EdgeId(15) }));
    assert!(matches!(p32.end, PathEnd::BackEdge { proc: POW, back: EdgeId(5) }));
    // A path with no surrogate has an empty context-prefix.
    assert_eq!(decode(&num, 17).unwrap().context_prefix_len(), 0);
    assert_eq!(decode(&num, 36), Err(PathError::OutOfRange { n: 36, num_paths: 36 }));
}

#[test]
fn melski_reps_1998_fig9_context_profile() {
    let sg = Supergraph::build(pow_program());
    let num = sg.number(Mode::Context).unwrap();
    let mut sim = Simulator::new(&num);
    sim.run(&pow_execution()).unwrap();
    let expected = profile(&[
        (16, 1),
        (18, 9),
        (24, 9),
        (25, 3),
        (27, 3),
        (28, 3),
        (29, 6),
        (30, 3),
        (32, 3),
        (33, 3),
        (34, 5),
        (35, 1),
    ]);
    assert_eq!(sim.profile(), &expected);
    assert_eq!(sim.profile().values().sum::<u64>(), 49);
}

#[test]
fn melski_reps_1998_fig15_piecewise_psi_rho() {
    let sg = Supergraph::build(pow_program());
    let num = sg.number(Mode::Piecewise).unwrap();
    num.check_invariants().unwrap();
    let all = |p: ProcId, n: usize| (0..=n).map(|b| num.psi(p, BlockId(b as u32))).collect::<Vec<_>>();
    // pow: u1 = u2 = u3 = u9 = ⟨1,1⟩; u4, u5 = ⟨0,1⟩; u7 = u8 = ⟨1,0⟩.
    assert_eq!(all(POW, 6), vec![l(1, 1), l(1, 1), l(1, 1), l(0, 1), l(0, 1), l(1, 0), l(1, 0)]);
    assert_eq!(num.psi_gentry(POW), l(1, 1));
    // main: v1..v4 = v17 = ⟨1,7⟩; v5 = ⟨0,7⟩; v6 = ⟨0,4⟩; v7..v9 = ⟨0,3⟩; v10 = ⟨0,2⟩; v11..v13 = ⟨0,1⟩;
    // v15 = v16 = ⟨1,0⟩.
    let mut main = vec![l(1, 7); 4];
    main.extend([l(0, 7), l(0, 4), l(0, 3), l(0, 3), l(0, 3), l(0, 2), l(0, 1), l(0, 1), l(0, 1), l(1, 0), l(1, 0)]);
    assert_eq!(all(MAIN, 14), main);
    assert_eq!(num.psi_gentry(MAIN), l(1, 7));
    let mut rho = nonzero_rho(&num, MAIN);
    rho.extend(nonzero_rho(&num, POW));
    rho.sort();
    assert_eq!(
        rho,
        rho_table(&[("v4", "v15", l(0, 7)), ("v5", "v9", l(0, 4)), ("v9", "v13", l(0, 2)), ("u3", "u7", l(0, 1))])
    );
    // numUnbalRLPaths[v16] = 1, [u8] = ψ_v7(1) + ψ_v11(1) = 4 (Fig. 16); edgeValue u8→v7 = 0, u8→v11 = 3.
    assert_eq!((num.num_unbal_rl_paths(MAIN), num.num_unbal_rl_paths(POW)), (1, 4));
    assert_eq!(
        num.exit_successors(POW),
        &[
            ExitSucc { target: ExitTarget::Site(CallSiteId(0)), value: 0, count: 3 },
            ExitSucc { target: ExitTarget::Site(CallSiteId(1)), value: 3, count: 1 },
        ]
    );
    assert_eq!(num.exit_successors(MAIN), &[ExitSucc { target: ExitTarget::Global, value: 0, count: 1 }]);
    // Entry_global offsets 0, 8, 16 and the total 8 + 8 + 5 = 21 (§6.1.2).
    let entries: Vec<_> = num.entries().iter().map(|e| (e.kind, e.offset, e.count)).collect();
    assert_eq!(
        entries,
        vec![(EntryKind::Root(MAIN), 0, 8), (EntryKind::Mid(MAIN), 8, 8), (EntryKind::Mid(POW), 16, 5)]
    );
    assert_eq!(num.num_paths(), 21);
}

#[test]
fn melski_reps_1998_fig14_21_piecewise_paths() {
    let sg = Supergraph::build(pow_program());
    let num = sg.number(Mode::Piecewise).unwrap();
    check_listing(
        &num,
        "
         0: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u4 u5 u6 XG
         1: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6 XG
         2: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
         3: EG v1 v2 v3 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v13 v14 XG
         4: EG v1 v2 v3 v4 v5 v9 v10 u1 u2 u3 u4 u5 u6 XG
         5: EG v1 v2 v3 v4 v5 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
         6: EG v1 v2 v3 v4 v5 v9 v13 v14 XG
         7: EG v1 v2 v3 v4 v15 v16 XG
         8: EG v17 v4 v5 v6 u1 u2 u3 u4 u5 u6 XG
         9: EG v17 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6 XG
        10: EG v17 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
        11: EG v17 v4 v5 v6 u1 u2 u3 u7 u8 v7 v8 v9 v13 v14 XG
        12: EG v17 v4 v5 v9 v10 u1 u2 u3 u4 u5 u6 XG
        13: EG v17 v4 v5 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
        14: EG v17 v4 v5 v9 v13 v14 XG
        15: EG v17 v4 v15 v16 XG
        16: EG u9 u3 u4 u5 u6 XG
        17: EG u9 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6 XG
        18: EG u9 u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14 XG
        19: EG u9 u3 u7 u8 v7 v8 v9 v13 v14 XG
        20: EG u9 u3 u7 u8 v11 v12 v13 v14 XG
        ",
    );
    // Example 6.1's path: starts inside pow, returns unbalanced to site 1 (u8→v7, printed "u4→v7" in the TR),
    // calls pow again from site 2.
    let p17 = decode(&num, 17).unwrap();
    assert!(matches!(p17.steps[0].via, Via::MidEntry { back: EdgeId(5) }));
    assert!(matches!(p17.steps[2].via, Via::Return { site: CallSiteId(0), edge: EdgeId(6) }));
    assert_eq!(p17.context_prefix_len(), 0, "piecewise paths have no context-prefix");
}

#[test]
fn melski_reps_1998_fig17_piecewise_profile() {
    let sg = Supergraph::build(pow_program());
    let num = sg.number(Mode::Piecewise).unwrap();
    let mut sim = Simulator::new(&num);
    sim.run(&pow_execution()).unwrap();
    let expected = profile(&[(6, 1), (8, 9), (12, 3), (14, 5), (15, 1), (16, 15), (17, 3), (19, 6), (20, 6)]);
    assert_eq!(sim.profile(), &expected);
    assert_eq!(sim.profile().values().sum::<u64>(), 49);
}

/// `main(){ fact(3); }`, `fact(n){ if (n <= 1) return 1; else return n * fact(n - 1); }` (not in the TR: derived
/// by hand with its rules).
/// main: m1 = 0 → m2 = 1 (call fact) → m3 = 2 → Exit. fact: f1 = 0 → f2 = 1 → [f3 = 2 (base), f4 = 3 (call
/// fact)]; f4 → f5 = 4; f3, f5 → Exit.
fn fact_program() -> Program {
    let main = test_cfg(3, &[(0, 1), (1, 2)], &[2]);
    let fact = test_cfg(5, &[(0, 1), (1, 2), (1, 3), (3, 4)], &[2, 4]);
    let fact_id = ProcId(1);
    Program::new(vec![
        Procedure::new(main, vec![CallSite { block: BlockId(1), callee: Callee::Proc(fact_id) }]),
        Procedure::new(fact, vec![CallSite { block: BlockId(3), callee: Callee::Proc(fact_id) }]),
    ])
    .unwrap()
}

fn fact_execution() -> Execution {
    let e = |i: u32| Event::Edge(EdgeId(i));
    // fact(n > 1): f1→f2, f2→f4, call, …, return from f5 (edge 5); fact(1): f1→f2, f2→f3, return from f3 (edge 4).
    let mut events = vec![e(0), Event::Call];
    for _ in 0..2 {
        events.extend([e(0), e(2), Event::Call]);
    }
    events.extend([e(0), e(1), Event::Return(EdgeId(4))]);
    events.extend([Event::Return(EdgeId(5)), Event::Return(EdgeId(5))]);
    events.push(Event::Return(EdgeId(2)));
    Execution { root: MAIN, events }
}

#[test]
fn melski_reps_1998_fact3_recursion_oracle() {
    let fact = ProcId(1);
    let sg = Supergraph::build(fact_program());
    assert_eq!(sg.calls().roles(), &[SiteRole::Interprocedural, SiteRole::Recursive]);
    assert_eq!(sg.calls().roots(), &[MAIN, fact]);
    let num = sg.number(Mode::Context).unwrap();
    num.check_invariants().unwrap();
    let psi: Vec<Linear> = (0..=5).map(|b| num.psi(fact, BlockId(b))).collect();
    assert_eq!(psi, vec![l(2, 0), l(2, 0), l(1, 0), l(1, 0), l(1, 0), l(1, 0)]);
    assert_eq!(
        (0..=3).map(|b| num.psi(MAIN, BlockId(b))).collect::<Vec<_>>(),
        vec![l(2, 0), l(2, 0), l(1, 0), l(1, 0)]
    );
    assert_eq!(nonzero_rho(&num, fact).iter().map(|r| r.2).collect::<Vec<_>>(), vec![l(1, 0)]);
    let offsets: Vec<_> = num.entries().iter().map(|e| (e.kind, e.offset)).collect();
    assert_eq!(offsets, vec![(EntryKind::Root(MAIN), 0), (EntryKind::Root(fact), 2)]);
    assert_eq!(num.num_paths(), 4);
    // 0: main → fact base → main exit; 1: main → fact → summary → main exit; 2: EG → fact base → XG;
    // 3: EG → fact → summary (recursive call elided) → XG.
    let shapes: Vec<(ProcId, usize, bool)> = (0..4)
        .map(|n| {
            let p = decode(&num, n).unwrap();
            assert_eq!(encode(&num, &p), Ok(n));
            let summary = p.steps.iter().any(|s| matches!(s.via, Via::Summary { site: CallSiteId(1) }));
            (p.steps[0].proc, p.steps.len(), summary)
        })
        .collect();
    assert_eq!(shapes, vec![(MAIN, 6, false), (MAIN, 7, true), (fact, 3, false), (fact, 4, true)]);
    // §5.5 step 7 for fact(3): the innermost call records 2, the middle one 3, main 1.
    for mode in [Mode::Context, Mode::Piecewise] {
        let num = sg.number(mode).unwrap();
        let mut sim = Simulator::new(&num);
        sim.run(&fact_execution()).unwrap();
        assert_eq!(sim.profile(), &profile(&[(1, 1), (2, 1), (3, 1)]), "{mode:?}");
    }
}

#[test]
fn traces_that_do_not_fit_the_program_are_errors() {
    let sg = Supergraph::build(pow_program());
    let num = sg.number(Mode::Context).unwrap();
    let mut sim = Simulator::new(&num);
    let run = |sim: &mut Simulator<'_, '_>, root: ProcId, events: Vec<Event>| sim.run(&Execution { root, events });
    assert_eq!(run(&mut sim, POW, vec![]), Err(TraceError::NotARoot(POW)));
    assert_eq!(run(&mut sim, MAIN, vec![Event::Edge(EdgeId(0))]), Err(TraceError::Incomplete));
    assert!(matches!(run(&mut sim, MAIN, vec![Event::Edge(EdgeId(3))]), Err(TraceError::BadEvent { position: 0, .. })));
    assert!(matches!(run(&mut sim, MAIN, vec![Event::Call]), Err(TraceError::BadEvent { .. })));
    assert!(matches!(run(&mut sim, MAIN, vec![Event::Return(EdgeId(16))]), Err(TraceError::BadEvent { .. })));
    assert!(matches!(run(&mut sim, MAIN, vec![Event::Edge(EdgeId(99))]), Err(TraceError::BadEvent { .. })));
    // A call block is left through Event::Call, not its branch.
    let to_call = [0, 1, 2, 3, 5].map(|e| Event::Edge(EdgeId(e)));
    let mut events = to_call.to_vec();
    events.push(Event::Edge(EdgeId(7)));
    assert!(matches!(run(&mut sim, MAIN, events), Err(TraceError::BadEvent { position: 5, .. })));
    // Events after the end.
    let mut events = [0, 1, 2, 4].map(|e| Event::Edge(EdgeId(e))).to_vec();
    events.extend([Event::Return(EdgeId(16)), Event::Edge(EdgeId(0))]);
    assert!(matches!(run(&mut sim, MAIN, events), Err(TraceError::BadEvent { position: 5, .. })));
    assert!(sim.profile().is_empty(), "failed runs leave the profile unchanged");
}

/// An erratum of TR-1382: after a return with no open call, Algorithm 6.1 must set NVC to
/// numUnbalRLPaths\[Exit_S\] of the procedure returned to, not ψ_r(numUnbalRLPaths\[Exit_S\]) as printed. The pow
/// example cannot tell the two apart (all of main's ρ are constants); here the caller has ρ = ⟨1,0⟩ after the
/// return site, and the printed rule would give two paths the number 5.
///
/// main: m0 → m1 (call g) → m2 → [m3, m4] → Exit; g: g0 → g1, g1 → g1 (back edge), g1 → Exit.
#[test]
fn melski_reps_1998_alg_6_1_erratum_unbalanced_return_uses_exit_of_caller() {
    let main = test_cfg(5, &[(0, 1), (1, 2), (2, 3), (2, 4)], &[3, 4]);
    let g = test_cfg(2, &[(0, 1), (1, 1)], &[1]);
    let g_id = ProcId(1);
    let program = Program::new(vec![
        Procedure::new(main, vec![CallSite { block: BlockId(1), callee: Callee::Proc(g_id) }]),
        Procedure::new(g, vec![]),
    ])
    .unwrap();
    let sg = Supergraph::build(program);
    let num = sg.number(Mode::Piecewise).unwrap();
    assert_eq!(num.psi(MAIN, BlockId(2)), l(2, 0));
    assert_eq!((num.num_unbal_rl_paths(MAIN), num.num_unbal_rl_paths(g_id)), (1, 2));
    assert_eq!(num.num_paths(), 6);
    for n in 0..6 {
        assert_eq!(encode(&num, &decode(&num, n).unwrap()), Ok(n));
    }
    // Path 4 = EG GEntry_g g1 Exit_g m2 m4 Exit_main XG: 3 (offset) + 0 + ρ_{m2→m4}(NVC = 1) = 4.
    let p4 = decode(&num, 4).unwrap();
    assert!(matches!(p4.steps[0].via, Via::MidEntry { .. }));
    assert!(matches!(p4.steps[1].via, Via::Return { .. }));
    assert_eq!(p4.steps[2].block, BlockId(4));
    // main calls g, g iterates once and returns, main takes m2→m4: records 2 (at the back edge) and 4.
    let e = |i: u32| Event::Edge(EdgeId(i));
    let exec = Execution {
        root: MAIN,
        events: vec![e(0), Event::Call, e(0), e(1), Event::Return(EdgeId(2)), e(3), Event::Return(EdgeId(5))],
    };
    let mut sim = Simulator::new(&num);
    sim.run(&exec).unwrap();
    assert_eq!(sim.profile(), &profile(&[(2, 1), (4, 1)]));
}
