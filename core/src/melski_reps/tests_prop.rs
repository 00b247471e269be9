//! Property tests on random small programs with loops, recursion, multiple call sites, cut and external calls
//! and termination edges: the numbering of each mode is dense and decoding round-trips (against brute-force
//! enumeration of G*_fn's observable paths), the runtime simulator records exactly the observable paths an
//! independent segmentation of the same random execution yields, the edge counts derived from the decoded
//! profile are the edges the execution took, and the arrival-counting runtime's profile nets to the same
//! profile.

use super::*;
use crate::graph::{test_cfg, BlockId, Cfg, Edge, EdgeId, EdgeKind};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashSet};

pub(super) use crate::test_rng::Rng;

/// A random program of 1–4 procedures. Per procedure: blocks 0..n (n ≤ 7) on a skeleton chain 0→1→…→n−1 that returns, a bypass
/// 0→n−1 (so every procedure can return without calling: executions can always be steered to an end), call
/// blocks c ∈ 1..=n−3 with return site c+1, a few extra branches (forward, backward, self-loops, parallel; never
/// out of a call block or into a return site or the entry), extra returns and termination edges.
pub(super) fn random_program(rng: &mut Rng) -> Program {
    let nprocs = 1 + rng.below(4);
    let mut procs = Vec::new();
    for _ in 0..nprocs {
        let n = 1 + rng.below(7) as u32;
        let mut is_call = vec![false; n as usize];
        let mut is_ret = vec![false; n as usize];
        for c in 1..n.saturating_sub(2) {
            if rng.chance(2) {
                is_call[c as usize] = true;
                is_ret[c as usize + 1] = true;
            }
        }
        let mut branches: Vec<(u32, u32)> = (0..n.saturating_sub(1)).map(|i| (i, i + 1)).collect();
        if n >= 2 {
            branches.push((0, n - 1));
        }
        for _ in 0..rng.below(4) {
            let u = rng.below(n as usize) as u32;
            let t = 1 + rng.below(n as usize - 1 + usize::from(n == 1)) as u32;
            if n >= 2 && !is_call[u as usize] && !is_ret[t as usize] {
                branches.push((u, t));
            }
        }
        let mut order: Vec<usize> = (0..branches.len()).collect();
        // Shuffle so that successor orders vary (the skeleton edge is not always first).
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let mut edges = Vec::new();
        let mut succ = vec![0u32; n as usize];
        for i in order {
            let (f, t) = branches[i];
            edges.push(Edge { from: BlockId(f), to: BlockId(t), kind: EdgeKind::Branch { succ: succ[f as usize] } });
            succ[f as usize] += 1;
        }
        for b in 0..n {
            if (b == n - 1 || rng.chance(6)) && !is_call[b as usize] {
                edges.push(Edge { from: BlockId(b), to: BlockId(n), kind: EdgeKind::Return });
            }
            if rng.chance(if is_call[b as usize] { 3 } else { 7 }) {
                edges.push(Edge { from: BlockId(b), to: BlockId(n), kind: EdgeKind::Termination });
            }
        }
        edges.push(Edge { from: BlockId(n), to: BlockId(0), kind: EdgeKind::ExitToEntry });
        let cfg = Cfg::new(n, edges).expect("generator builds valid CFGs");
        let sites = (0..n)
            .filter(|&c| is_call[c as usize])
            .map(|c| {
                let q = ProcId(rng.below(nprocs) as u32);
                let callee = match rng.below(10) {
                    0..=6 => Callee::Proc(q),
                    7 => Callee::Cut(q),
                    _ => Callee::External,
                };
                CallSite { block: BlockId(c), callee }
            })
            .collect();
        let mut proc = Procedure::new(cfg, sites);
        proc.external_entry = rng.chance(6);
        // Cut vertices (how the pass bounds a function's own paths): any block but the entry and call blocks.
        if rng.chance(3) {
            proc.cut_vertices = (1..n).filter(|&b| !is_call[b as usize] && rng.chance(3)).map(BlockId).collect();
        }
        // Reset loop headers (how the pass keeps loop counts constant): any block but the entry, loop header or
        // not, call block or not (a reader must take whatever a profile records).
        if rng.chance(2) {
            proc.reset_headers = (1..n).filter(|_| rng.chance(2)).map(BlockId).collect();
        }
        procs.push(proc);
    }
    Program::new(procs).expect("generator builds valid programs")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum At {
    Block(BlockId),
    GEntry,
    Exit(EdgeId),
}

/// Every observable path of G*_fn by brute force over its structure (arcs and the call graph, no ψ/ρ values);
/// `None` above `limit` paths.
fn enumerate(num: &Numbering<'_>, limit: usize) -> Option<Vec<InterprocPath>> {
    struct St {
        steps: Vec<Step>,
        proc: ProcId,
        at: At,
        frames: Vec<CallSiteId>,
        open_root: bool,
    }
    let sg = num.supergraph();
    let program = sg.program();
    let mut out = Vec::new();
    let mut stack: Vec<St> = Vec::new();
    for e in num.entries() {
        stack.push(match e.kind {
            EntryKind::Root(p) => St {
                steps: vec![Step { proc: p, block: BlockId(0), via: Via::RootEntry }],
                proc: p,
                at: At::Block(BlockId(0)),
                frames: vec![],
                open_root: true,
            },
            EntryKind::Mid(p) => St { steps: vec![], proc: p, at: At::GEntry, frames: vec![], open_root: false },
        });
    }
    while let Some(st) = stack.pop() {
        if out.len() > limit || stack.len() > 50 * limit {
            return None;
        }
        let p = st.proc;
        let step = |st: &St, proc, block, via, at, frames: Vec<CallSiteId>| St {
            steps: [st.steps.clone(), vec![Step { proc, block, via }]].concat(),
            proc,
            at,
            frames,
            open_root: st.open_root,
        };
        match st.at {
            At::Block(_) | At::GEntry => {
                let arcs = match st.at {
                    At::Block(b) => num.arcs(p, b),
                    _ => num.gentry_arcs(p),
                };
                for a in arcs {
                    let fr = st.frames.clone();
                    match a.kind {
                        ArcKind::Branch { edge, to } => {
                            stack.push(step(&st, p, to, Via::Edge(edge), At::Block(to), fr))
                        }
                        ArcKind::LoopRestart { back, to } => {
                            let via =
                                if st.at == At::GEntry { Via::MidEntry { back } } else { Via::LoopRestart { back } };
                            stack.push(step(&st, p, to, via, At::Block(to), fr));
                        }
                        ArcKind::Call { site, callee, .. } => {
                            let mut fr = fr;
                            fr.push(site);
                            stack.push(step(&st, callee, BlockId(0), Via::Call { site }, At::Block(BlockId(0)), fr));
                        }
                        ArcKind::Summary { site, ret } => {
                            stack.push(step(&st, p, ret, Via::Summary { site }, At::Block(ret), fr))
                        }
                        ArcKind::Return { edge } => stack.push(St {
                            steps: st.steps.clone(),
                            proc: p,
                            at: At::Exit(edge),
                            frames: fr,
                            open_root: st.open_root,
                        }),
                        ArcKind::Termination { edge } => out.push(InterprocPath {
                            steps: st.steps.clone(),
                            end: PathEnd::Termination { proc: p, edge },
                        }),
                        ArcKind::BackEdgeExit { back } => out
                            .push(InterprocPath { steps: st.steps.clone(), end: PathEnd::BackEdge { proc: p, back } }),
                    }
                }
            }
            At::Exit(edge) => {
                let mut frames = st.frames.clone();
                if let Some(site) = frames.pop() {
                    let info = program.site(site).unwrap();
                    let via = Via::Return { site, edge };
                    stack.push(step(&st, info.proc, info.ret, via, At::Block(info.ret), frames));
                } else if st.open_root {
                    out.push(InterprocPath { steps: st.steps.clone(), end: PathEnd::RootReturn { proc: p, edge } });
                } else {
                    assert_eq!(num.mode(), Mode::Piecewise, "context paths always have an open call or root");
                    for &site in sg.calls().callers(p) {
                        let info = program.site(site).unwrap();
                        let via = Via::Return { site, edge };
                        stack.push(step(&st, info.proc, info.ret, via, At::Block(info.ret), vec![]));
                    }
                    if sg.calls().is_root(p) {
                        out.push(InterprocPath { steps: st.steps.clone(), end: PathEnd::RootReturn { proc: p, edge } });
                    }
                }
            }
        }
    }
    Some(out)
}

/// Minimal number of events from each block of each procedure to its return (u64::MAX: cannot return).
fn costs(program: &Program) -> Vec<Vec<u64>> {
    let mut dist: Vec<Vec<u64>> = program.procs().iter().map(|p| vec![u64::MAX; p.cfg.num_blocks()]).collect();
    loop {
        let mut changed = false;
        for p in program.proc_ids() {
            let cfg = program.cfg(p);
            for b in 0..cfg.num_blocks() {
                let block = BlockId::from_index(b);
                let best = if let Some(s) = program.site_at(p, block) {
                    let info = program.site(s).unwrap();
                    let callee = match info.callee {
                        Callee::Proc(q) | Callee::Cut(q) => dist[q.index()][0],
                        Callee::External => 0,
                    };
                    callee.saturating_add(dist[p.index()][info.ret.index()]).saturating_add(1)
                } else {
                    cfg.edges()
                        .iter()
                        .filter(|e| e.from == block)
                        .map(|e| match e.kind {
                            EdgeKind::Branch { .. } => dist[p.index()][e.to.index()].saturating_add(1),
                            EdgeKind::Return => 1,
                            _ => u64::MAX,
                        })
                        .min()
                        .unwrap_or(u64::MAX)
                };
                if best < dist[p.index()][b] {
                    dist[p.index()][b] = best;
                    changed = true;
                }
            }
        }
        if !changed {
            return dist;
        }
    }
}

/// A random execution of `root`: random moves for `budget` events (with occasional termination), then moves that
/// minimise the remaining cost, so it always ends.
pub(super) fn random_execution(sg: &Supergraph, rng: &mut Rng, root: ProcId, budget: usize) -> Execution {
    Execution { root, events: random_events(sg, rng, vec![(root, BlockId(0), None)], budget) }
}

/// [`random_execution`]'s events from the activations `frames` (procedure, current block, call site entered
/// through) on.
pub(super) fn random_events(
    sg: &Supergraph,
    rng: &mut Rng,
    mut frames: Vec<(ProcId, BlockId, Option<CallSiteId>)>,
    budget: usize,
) -> Vec<Event> {
    let program = sg.program();
    let dist = costs(program);
    let mut events = Vec::new();
    while let Some(&(p, b, _)) = frames.last() {
        assert!(events.len() < 100_000, "steering failed");
        let cfg = program.cfg(p);
        let steer = events.len() >= budget || frames.len() > 6;
        let outs: Vec<(EdgeId, Edge)> = cfg
            .edges()
            .iter()
            .enumerate()
            .filter(|(_, e)| e.from == b)
            .map(|(i, e)| (EdgeId::from_index(i), *e))
            .collect();
        let terms: Vec<EdgeId> =
            outs.iter().filter(|(_, e)| e.kind == EdgeKind::Termination).map(|&(i, _)| i).collect();
        if !terms.is_empty() && !steer && rng.chance(12) {
            events.push(Event::Terminate(terms[rng.below(terms.len())]));
            break;
        }
        if let Some(site) = program.site_at(p, b) {
            events.push(Event::Call);
            let info = program.site(site).unwrap();
            match info.callee {
                Callee::Proc(q) | Callee::Cut(q) => frames.push((q, BlockId(0), Some(site))),
                Callee::External => frames.last_mut().unwrap().1 = info.ret,
            }
            continue;
        }
        let moves: Vec<(EdgeId, Edge)> =
            outs.into_iter().filter(|(_, e)| matches!(e.kind, EdgeKind::Branch { .. } | EdgeKind::Return)).collect();
        let cost = |e: &Edge| match e.kind {
            EdgeKind::Return => 1,
            _ => dist[p.index()][e.to.index()].saturating_add(1),
        };
        let branches: Vec<(EdgeId, Edge)> = moves.iter().copied().filter(|(_, e)| e.kind != EdgeKind::Return).collect();
        let pick = if steer {
            moves.iter().min_by_key(|(_, e)| cost(e)).copied()
        } else if !branches.is_empty() && !rng.chance(4) {
            // Prefer branches while exploring, so executions iterate loops and make calls.
            Some(branches[rng.below(branches.len())])
        } else if moves.is_empty() {
            None
        } else {
            Some(moves[rng.below(moves.len())])
        };
        let Some((id, e)) = pick else {
            // A dead end (cannot happen with the generator's bypass, but stay total).
            events.push(Event::Terminate(*terms.first().expect("dead end without termination edge")));
            break;
        };
        if e.kind == EdgeKind::Return {
            events.push(Event::Return(id));
            let (_, _, site) = frames.pop().unwrap();
            if let (Some(site), Some(top)) = (site, frames.last_mut()) {
                top.1 = program.site(site).unwrap().ret;
            }
        } else {
            events.push(Event::Edge(id));
            frames.last_mut().unwrap().1 = e.to;
        }
    }
    events
}

/// The observable paths an execution is cut into, by their definition (§3.4, §6): independent of ψ/ρ and of
/// the simulator's bookkeeping.
fn observed_paths(sg: &Supergraph, mode: Mode, exec: &Execution) -> Vec<InterprocPath> {
    struct F {
        proc: ProcId,
        block: BlockId,
        site: Option<CallSiteId>,
        separate: bool,
        /// The current path right after this activation was entered (ends with its entry step).
        prefix: Vec<Step>,
        pending: Option<Vec<Step>>,
    }
    let program = sg.program();
    let mut cur = vec![Step { proc: exec.root, block: BlockId(0), via: Via::RootEntry }];
    let mut frames =
        vec![F { proc: exec.root, block: BlockId(0), site: None, separate: true, prefix: cur.clone(), pending: None }];
    let mut out = Vec::new();
    for &ev in &exec.events {
        let top = frames.last_mut().unwrap();
        let p = top.proc;
        match ev {
            Event::Edge(e) => {
                let edge = *program.cfg(p).edge(e);
                let to = edge.to;
                // A cut vertex's branches end and restart paths like back edges (from the procedure's list, not
                // from the DAG under test).
                let cut =
                    program.proc(p).cut_vertices.contains(&edge.from) && matches!(edge.kind, EdgeKind::Branch { .. });
                // A reset loop's header (one listed that a back edge enters): every edge into it ends the path,
                // and every path into it restarts as after its first back edge.
                let cfg = program.cfg(p);
                let shared_back = (to != BlockId(0) && program.proc(p).reset_headers.contains(&to))
                    .then(|| cfg.edge_ids().find(|&b| cfg.edge(b).to == to && sg.dfs(p).is_back_edge(b)))
                    .flatten();
                let entry_cut = shared_back.is_some() && matches!(edge.kind, EdgeKind::Branch { .. });
                if sg.dfs(p).is_back_edge(e) || cut || entry_cut {
                    out.push(InterprocPath { steps: cur.clone(), end: PathEnd::BackEdge { proc: p, back: e } });
                    let back = shared_back.unwrap_or(e);
                    cur = match mode {
                        Mode::Context => {
                            [top.prefix.clone(), vec![Step { proc: p, block: to, via: Via::LoopRestart { back } }]]
                                .concat()
                        }
                        Mode::Piecewise => vec![Step { proc: p, block: to, via: Via::MidEntry { back } }],
                    };
                } else {
                    cur.push(Step { proc: p, block: to, via: Via::Edge(e) });
                }
                top.block = to;
            }
            Event::Call => {
                let site = program.site_at(p, top.block).unwrap();
                let info = *program.site(site).unwrap();
                match (sg.calls().role(site), info.callee) {
                    (SiteRole::Interprocedural, Callee::Proc(q)) => {
                        cur.push(Step { proc: q, block: BlockId(0), via: Via::Call { site } });
                        let f = F {
                            proc: q,
                            block: BlockId(0),
                            site: Some(site),
                            separate: false,
                            prefix: cur.clone(),
                            pending: None,
                        };
                        frames.push(f);
                    }
                    (SiteRole::Recursive | SiteRole::Cut, Callee::Proc(q) | Callee::Cut(q)) => {
                        top.pending = Some(std::mem::replace(
                            &mut cur,
                            vec![Step { proc: q, block: BlockId(0), via: Via::RootEntry }],
                        ));
                        let f = F {
                            proc: q,
                            block: BlockId(0),
                            site: Some(site),
                            separate: true,
                            prefix: cur.clone(),
                            pending: None,
                        };
                        frames.push(f);
                    }
                    (SiteRole::External, Callee::External) => {
                        cur.push(Step { proc: p, block: info.ret, via: Via::Summary { site } });
                        top.block = info.ret;
                    }
                    other => panic!("unexpected call {other:?}"),
                }
            }
            Event::Return(e) => {
                let f = frames.pop().unwrap();
                if f.separate {
                    out.push(InterprocPath { steps: cur.clone(), end: PathEnd::RootReturn { proc: f.proc, edge: e } });
                }
                if let Some(site) = f.site {
                    let info = *program.site(site).unwrap();
                    let caller = frames.last_mut().unwrap();
                    if f.separate {
                        cur = caller.pending.take().unwrap();
                        cur.push(Step { proc: info.proc, block: info.ret, via: Via::Summary { site } });
                    } else {
                        cur.push(Step { proc: info.proc, block: info.ret, via: Via::Return { site, edge: e } });
                    }
                    caller.block = info.ret;
                }
            }
            Event::Terminate(e) => {
                out.push(InterprocPath { steps: cur.clone(), end: PathEnd::Termination { proc: p, edge: e } });
                for f in frames.iter().rev().skip(1) {
                    let Some(pending) = &f.pending else { continue };
                    let cfg = program.cfg(f.proc);
                    let term = (0..cfg.num_edges())
                        .map(EdgeId::from_index)
                        .find(|&t| cfg.edge(t).from == f.block && cfg.edge(t).kind == EdgeKind::Termination);
                    if let Some(t) = term {
                        out.push(InterprocPath {
                            steps: pending.clone(),
                            end: PathEnd::Termination { proc: f.proc, edge: t },
                        });
                    }
                }
                frames.clear();
            }
        }
        if frames.is_empty() {
            break;
        }
    }
    out
}

const ENUMERATION_LIMIT: usize = 1500;

/// Brute-force check of one numbering: the enumerated observable paths get exactly the numbers 0..N and
/// decoding inverts encoding. Returns the paths (`None` if there are too many to enumerate).
fn check_enumeration(num: &Numbering<'_>) -> Option<Vec<InterprocPath>> {
    let mode = num.mode();
    let total = num.num_paths();
    let paths = enumerate(num, ENUMERATION_LIMIT)?;
    assert_eq!(paths.len() as u128, total, "{mode:?}: path count");
    let mut seen = vec![false; paths.len()];
    for p in &paths {
        let n = encode(num, p).unwrap_or_else(|e| panic!("{mode:?}: {p}: {e}"));
        assert!(n < total && !seen[n as usize], "{mode:?}: number {n} out of range or repeated");
        seen[n as usize] = true;
        assert_eq!(decode(num, n).as_ref(), Ok(p), "{mode:?}: decode({n})");
    }
    Some(paths)
}

fn check_program(seed: u64) {
    let mut rng = Rng::new(seed);
    let program = random_program(&mut rng);
    let sg = Supergraph::build(program);
    // Classification invariants: callee_first is a topological order of the interprocedural call edges.
    let pos: BTreeMap<ProcId, usize> = sg.calls().callee_first().iter().enumerate().map(|(i, &p)| (p, i)).collect();
    assert_eq!(pos.len(), sg.program().num_procs());
    for (i, s) in sg.program().sites().iter().enumerate() {
        if let (SiteRole::Interprocedural, Callee::Proc(q)) = (sg.calls().role(CallSiteId::from_index(i)), s.callee) {
            assert!(pos[&q] < pos[&s.proc], "callee {q} after caller {}", s.proc);
        }
    }
    for p in sg.program().proc_ids() {
        assert!(sg.calls().is_root(p) || !sg.calls().callers(p).is_empty(), "{p} is unreachable in G*_fn");
    }
    // Grouping the procedures by the calls that join them classifies every call site as before, keeps the number
    // of paths, and makes every group a run of procedures.
    let order = super::units::component_order(sg.program());
    let grouped = sg.clone().permuted(&order).expect("a permutation");
    // Moving the procedures' DAGs equals building them again for the permuted program.
    let rebuilt = Supergraph::build(sg.program().permuted(&order).expect("a permutation"));
    assert_eq!(grouped.calls(), rebuilt.calls());
    for p in grouped.program().proc_ids() {
        assert_eq!(grouped.dag(p), rebuilt.dag(p));
    }
    for (i, old) in order.iter().enumerate() {
        let roles = |g: &Supergraph, p: ProcId| g.program().sites_of(p).map(|s| g.calls().role(s)).collect::<Vec<_>>();
        assert_eq!(roles(&grouped, ProcId::from_index(i)), roles(&sg, *old), "{old} grouped as {i}");
    }
    for mode in [Mode::Context, Mode::Piecewise] {
        assert_eq!(grouped.number(mode).unwrap().num_paths(), sg.number(mode).unwrap().num_paths());
    }
    // Each group (by search over the calls, both ways) is a run of procedures.
    let n = grouped.program().num_procs();
    let mut adj = vec![Vec::new(); n];
    for s in grouped.program().sites() {
        if let Callee::Proc(q) = s.callee {
            adj[s.proc.index()].push(q.index());
            adj[q.index()].push(s.proc.index());
        }
    }
    let mut seen = vec![false; n];
    for start in 0..n {
        if seen[start] {
            continue;
        }
        let (mut group, mut stack) = (Vec::new(), vec![start]);
        seen[start] = true;
        while let Some(x) = stack.pop() {
            group.push(x);
            for &y in &adj[x] {
                if !std::mem::replace(&mut seen[y], true) {
                    stack.push(y);
                }
            }
        }
        let (lo, hi) = (group.iter().min().unwrap(), group.iter().max().unwrap());
        assert_eq!(hi - lo + 1, group.len(), "group {group:?} is not a run");
    }
    // The paper's single numbering, and the finest storage units (each unit's paths one range of numbers).
    let unit_cuts = [vec![ProcId(0)], super::units::finest_units(&sg)];
    for (mode, units) in
        [Mode::Context, Mode::Piecewise].into_iter().flat_map(|m| unit_cuts.iter().map(move |u| (m, u)))
    {
        let num = sg.number_in_units(mode, units).unwrap();
        num.check_invariants().unwrap();
        let total = num.num_paths();
        assert_eq!(total, sg.number(mode).unwrap().num_paths(), "{mode:?}: units change the number of paths");
        let enumerated = check_enumeration(&num);
        // Round trip of random numbers (also when there are too many paths to enumerate).
        for _ in 0..8 {
            if total == 0 {
                break;
            }
            let n = u128::from(rng.next()) % total;
            let p = decode(&num, n).unwrap();
            assert_eq!(encode(&num, &p), Ok(n));
        }
        check_walk_tails(&num, &mut rng);
        // Random executions: the simulator records exactly the observable paths of the execution.
        let known: Option<HashSet<&InterprocPath>> = enumerated.as_ref().map(|v| v.iter().collect());
        for _ in 0..4 {
            let roots = sg.calls().roots();
            let root = roots[rng.below(roots.len())];
            let budget = rng.below(60);
            let exec = random_execution(&sg, &mut rng, root, budget);
            let mut sim = Simulator::new(&num);
            sim.run(&exec).unwrap_or_else(|e| panic!("{mode:?}: {e} in {exec:?}"));
            let mut expected = Profile::new();
            for p in observed_paths(&sg, mode, &exec) {
                if let Some(known) = &known {
                    assert!(known.contains(&p), "{mode:?}: observed path {p} is not an observable path");
                }
                let n = encode(&num, &p).unwrap_or_else(|e| panic!("{mode:?}: {p}: {e}"));
                let unit = &num.units()[num.unit_of(p.steps[0].proc)];
                assert!(n >= unit.first_path && n - unit.first_path < unit.num_paths, "{mode:?}: {p} outside its unit");
                *expected.entry(n).or_insert(0) += 1;
            }
            assert_eq!(sim.profile(), &expected, "{mode:?}: {exec:?}");
            // Edge counts derived from the decoded profile equal the edges the trace took.
            let decoded: Vec<(InterprocPath, i128)> =
                sim.profile().iter().map(|(&n, &c)| (decode(&num, n).unwrap(), i128::from(c))).collect();
            let derived = signed_edge_counts(sg.program(), mode, decoded.iter().map(|(p, c)| (p, *c)));
            if let Some(taken) = trace_edge_counts(sg.program(), &exec) {
                assert_eq!(derived, taken, "{mode:?}: {exec:?}");
            }
            check_arrivals(&num, &exec, sim.profile());
        }
    }
}

/// [`walk_tails`] over ascending, repeated and shuffled numbers (resuming from shared prefixes) gives each path's
/// end and last block visit as decoding it alone does.
fn check_walk_tails(num: &Numbering<'_>, rng: &mut Rng) {
    let total = num.num_paths();
    if total == 0 {
        return;
    }
    let mut numbers: Vec<u128> = if total <= 300 {
        (0..total).collect()
    } else {
        let mut v: Vec<u128> = (0..300).map(|_| u128::from(rng.next()) % total).collect();
        v.sort_unstable();
        v
    };
    numbers.extend(numbers.clone().iter().rev().step_by(3));
    for i in (1..numbers.len()).rev().step_by(7) {
        numbers.swap(i, rng.below(i + 1));
    }
    let mut got = Vec::new();
    walk_tails(num, &numbers, DEFAULT_MAX_STEPS, |i, tail| got.push((numbers[i], tail))).unwrap();
    let want: Vec<(u128, PathTail)> = numbers
        .iter()
        .map(|&n| {
            let p = decode(num, n).unwrap();
            (n, (p.end, p.steps.last().map(|&s| (p.steps.len() - 1, s))))
        })
        .collect();
    assert_eq!(got, want, "{:?}", num.mode());
}

/// The arrival-counting runtime's profile of `exec`, netted, is the profile the exact (+1 at the termination)
/// simulator records, path by path, with each path decoded. Executions the pass cannot produce (an
/// interprocedural call block left abnormally before its call) are skipped.
fn check_arrivals(num: &Numbering<'_>, exec: &Execution, exact: &Profile) {
    let mode = num.mode();
    let mut sim = Simulator::counting_arrivals(num);
    match sim.run(exec) {
        Err(TraceError::ImpossibleTermination { .. }) => return,
        other => other.unwrap_or_else(|e| panic!("{mode:?}: {e} in {exec:?}")),
    }
    let raw: BTreeMap<u128, i128> = sim.profile().iter().map(|(&n, &c)| (n, i128::from(c))).collect();
    // Ranking (the netting's walk of every counted path) split over threads keeps every path's rank and order.
    let counted: Vec<(u128, i128)> = raw.iter().map(|(&n, &c)| (n, c)).collect();
    let one = super::arrivals::ranked_on(num, &counted, 1).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
    assert_eq!(super::arrivals::ranked_on(num, &counted, 3).as_ref(), Ok(&one), "{mode:?}");
    assert_eq!(one.iter().map(|&(_, n, c)| (n, c)).collect::<Vec<_>>(), counted, "{mode:?}");
    let net = net_counts_from_arrivals(num, &raw).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
    let got: Profile = net
        .iter()
        .map(|(&n, p)| {
            assert_eq!(decode(num, n).as_ref(), Ok(&p.path), "{mode:?}: path {n}");
            (n, u64::try_from(p.count).unwrap_or_else(|_| panic!("{mode:?}: path {n} nets to {}", p.count)))
        })
        .collect();
    assert_eq!(&got, exact, "{mode:?}: arrivals {raw:?} of {exec:?}");
}

/// The cfg edges an execution takes, tallied from its events alone: each activation's EXIT→entry edge when it
/// starts, `Branch` and `Return` edges as taken, a call site's c→r edge when the call returns (or at once for an
/// external call), and on termination the terminating edge plus, for every activation below it (each waiting in
/// a call block), that block's first termination edge. `None` when such a call block has no termination edge:
/// the random program then says the call cannot leave abnormally although the trace does, which no profile of a
/// consistent program (the pass gives every call that may not return a termination edge) has to account for.
fn trace_edge_counts(program: &Program, exec: &Execution) -> Option<Vec<Vec<i128>>> {
    let mut counts: Vec<Vec<i128>> = program.procs().iter().map(|p| vec![0; p.cfg.num_edges()]).collect();
    let mut frames: Vec<(ProcId, BlockId, Option<CallSiteId>)> = vec![(exec.root, BlockId(0), None)];
    counts[exec.root.index()][program.cfg(exec.root).exit_to_entry().index()] += 1;
    for &ev in &exec.events {
        let (p, b, _) = *frames.last().unwrap();
        match ev {
            Event::Edge(e) => {
                counts[p.index()][e.index()] += 1;
                frames.last_mut().unwrap().1 = program.cfg(p).edge(e).to;
            }
            Event::Call => {
                let site = program.site_at(p, b).unwrap();
                let info = *program.site(site).unwrap();
                match info.callee {
                    Callee::Proc(q) | Callee::Cut(q) => {
                        counts[q.index()][program.cfg(q).exit_to_entry().index()] += 1;
                        frames.push((q, BlockId(0), Some(site)));
                    }
                    Callee::External => {
                        counts[p.index()][info.call_edge.index()] += 1;
                        frames.last_mut().unwrap().1 = info.ret;
                    }
                }
            }
            Event::Return(e) => {
                counts[p.index()][e.index()] += 1;
                let (_, _, site) = frames.pop().unwrap();
                if let Some(site) = site {
                    let info = *program.site(site).unwrap();
                    counts[info.proc.index()][info.call_edge.index()] += 1;
                    frames.last_mut().unwrap().1 = info.ret;
                }
            }
            Event::Terminate(e) => {
                counts[p.index()][e.index()] += 1;
                for &(q, block, _) in frames.iter().rev().skip(1) {
                    let cfg = program.cfg(q);
                    let t = cfg
                        .edge_ids()
                        .find(|&t| cfg.edge(t).from == block && cfg.edge(t).kind == EdgeKind::Termination)?;
                    counts[q.index()][t.index()] += 1;
                }
                frames.clear();
            }
        }
    }
    Some(counts)
}

/// Random edits of valid paths and random traces: errors, never panics; a path that still encodes is a path.
fn check_garbage(seed: u64) {
    let mut rng = Rng::new(seed);
    let sg = Supergraph::build(random_program(&mut rng));
    for mode in [Mode::Context, Mode::Piecewise] {
        let num = sg.number(mode).unwrap();
        let total = num.num_paths();
        assert!(matches!(decode(&num, total), Err(PathError::OutOfRange { .. })));
        assert!(matches!(decode(&num, u128::MAX), Err(PathError::OutOfRange { .. })));
        if total == 0 {
            continue;
        }
        for _ in 0..16 {
            let mut p = decode(&num, u128::from(rng.next()) % total).unwrap();
            let i = rng.below(p.steps.len() + 1);
            let small = |rng: &mut Rng| rng.below(8) as u32;
            let len = p.steps.len();
            match (rng.below(6), p.steps.get_mut(i)) {
                (0, Some(s)) => s.block = BlockId(small(&mut rng)),
                (1, Some(s)) => s.proc = ProcId(small(&mut rng)),
                (2, Some(s)) => s.via = Via::Edge(EdgeId(small(&mut rng))),
                (3, Some(s)) => s.via = Via::Call { site: CallSiteId(small(&mut rng)) },
                (4, _) if i < len => {
                    p.steps.remove(i);
                }
                _ => p.end = PathEnd::RootReturn { proc: ProcId(small(&mut rng)), edge: EdgeId(small(&mut rng)) },
            }
            if let Ok(n) = encode(&num, &p) {
                assert_eq!(decode(&num, n), Ok(p), "encode accepted a non-path");
            }
        }
        for _ in 0..8 {
            let root = ProcId(rng.below(sg.program().num_procs() + 1) as u32);
            let events = (0..rng.below(20))
                .map(|_| match rng.below(4) {
                    0 => Event::Call,
                    1 => Event::Return(EdgeId(rng.below(10) as u32)),
                    2 => Event::Terminate(EdgeId(rng.below(10) as u32)),
                    _ => Event::Edge(EdgeId(rng.below(10) as u32)),
                })
                .collect();
            let mut sim = Simulator::new(&num);
            let _ = sim.run(&Execution { root, events });
        }
    }
}

fn direct(block: u32, callee: u32) -> CallSite {
    CallSite { block: BlockId(block), callee: Callee::Proc(ProcId(callee)) }
}

/// main → f → g → f: the closing call g→f is the recursive one (DFS from main); h ↔ k, called by nobody else,
/// are explored from h (lowest id), so k→h is recursive; a call in an unreachable block is dead and does not
/// keep its callee from being a root.
#[test]
fn call_graph_dfs_classifies_recursion_deterministically() {
    let call_chain = || test_cfg(3, &[(0, 1), (1, 2)], &[2]);
    // Procedure 5 has a dead call block 2 (unreachable) calling procedure 6.
    let dead = test_cfg(4, &[(0, 1), (2, 3)], &[1, 3]);
    let program = Program::new(vec![
        Procedure::new(call_chain(), vec![direct(1, 1)]), // 0 main → f
        Procedure::new(call_chain(), vec![direct(1, 2)]), // 1 f → g
        Procedure::new(call_chain(), vec![direct(1, 1)]), // 2 g → f (recursive)
        Procedure::new(call_chain(), vec![direct(1, 4)]), // 3 h → k
        Procedure::new(call_chain(), vec![direct(1, 3)]), // 4 k → h (recursive)
        Procedure::new(dead, vec![direct(2, 6)]),         // 5 dead call → 6
        Procedure::new(test_cfg(1, &[], &[0]), vec![]),   // 6
    ])
    .unwrap();
    let sg = Supergraph::build(program);
    use SiteRole::*;
    assert_eq!(sg.calls().roles(), &[Interprocedural, Interprocedural, Recursive, Interprocedural, Recursive, Dead]);
    let roots: Vec<u32> = sg.calls().roots().iter().map(|p| p.0).collect();
    assert_eq!(roots, vec![0, 1, 3, 5, 6]);
    assert_eq!(sg.calls().callers(ProcId(1)), &[CallSiteId(0)]);
    for mode in [Mode::Context, Mode::Piecewise] {
        let num = sg.number(mode).unwrap();
        num.check_invariants().unwrap();
        check_enumeration(&num).unwrap();
    }
}

/// The entry block may itself be a call block (its call arc comes first, the loop surrogates after it), calls may
/// be consecutive (a return site that is a call block), and switch-like parallel edges are distinct paths.
#[test]
fn entry_call_blocks_consecutive_calls_and_parallel_edges() {
    // f0: 0 (call f1) → 1 (call ext) → 2 → 3 → [4, 4 (parallel)], 4 → 3 (back edge), 4 → EXIT.
    let f0 = test_cfg(5, &[(0, 1), (1, 2), (2, 3), (3, 4), (3, 4), (4, 3)], &[4]);
    let f1 = test_cfg(2, &[(0, 1), (0, 1), (1, 1)], &[1]);
    let program = Program::new(vec![
        Procedure::new(f0, vec![direct(0, 1), CallSite { block: BlockId(1), callee: Callee::External }]),
        Procedure::new(f1, vec![]),
    ])
    .unwrap();
    let sg = Supergraph::build(program);
    for mode in [Mode::Context, Mode::Piecewise] {
        let num = sg.number(mode).unwrap();
        num.check_invariants().unwrap();
        assert!(matches!(num.arcs(ProcId(0), BlockId(0))[0].kind, ArcKind::Call { .. }));
        let paths = check_enumeration(&num).unwrap();
        assert!(paths.len() > 4);
        let mut rng = Rng::new(7);
        for _ in 0..20 {
            let exec = random_execution(&sg, &mut rng, ProcId(0), 30);
            let mut sim = Simulator::new(&num);
            sim.run(&exec).unwrap();
            let mut expected = Profile::new();
            for p in observed_paths(&sg, mode, &exec) {
                *expected.entry(encode(&num, &p).unwrap()).or_insert(0) += 1;
            }
            assert_eq!(sim.profile(), &expected);
        }
    }
}

/// 130 procedures, each a diamond followed by a call to the next: 2^130 paths overflow u128 — an error, not a
/// wrap. A chain that calls the next procedure twice has one path of exponential length: decoding stops at the
/// step limit.
#[test]
fn too_many_paths_and_too_long_paths_are_errors() {
    let chain = |n: u32, body: &dyn Fn(u32) -> Procedure| Program::new((0..n).map(body).collect()).unwrap();
    let diamonds = chain(130, &|i| {
        if i == 129 {
            Procedure::new(test_cfg(1, &[], &[0]), vec![])
        } else {
            Procedure::new(test_cfg(5, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)], &[4]), vec![direct(3, i + 1)])
        }
    });
    let sg = Supergraph::build(diamonds);
    for mode in [Mode::Context, Mode::Piecewise] {
        assert!(matches!(sg.number(mode), Err(NumberingError::TooManyPaths { .. })), "{mode:?}");
    }
    let twice = chain(13, &|i| {
        if i == 12 {
            Procedure::new(test_cfg(1, &[], &[0]), vec![])
        } else {
            Procedure::new(
                test_cfg(5, &[(0, 1), (1, 2), (2, 3), (3, 4)], &[4]),
                vec![direct(1, i + 1), direct(3, i + 1)],
            )
        }
    });
    let sg = Supergraph::build(twice);
    let num = sg.number(Mode::Context).unwrap();
    assert_eq!(num.num_paths(), 1);
    assert_eq!(decode_with_limit(&num, 0, 1000), Err(PathError::TooLong { limit: 1000 }));
    let p = decode(&num, 0).unwrap();
    assert!(p.steps.len() > 4096);
    assert_eq!(encode(&num, &p), Ok(0));
}

/// `main` (entry bb0 → call block bb1 with a `Termination` edge, cut call of `f` → bb2 → return) and `f` (bb0:
/// return, or terminate), with the two paths of each that a run can record besides the truncated ones.
struct CutCallee {
    sg: Supergraph,
    main_returns: InterprocPath,
    f_returns: InterprocPath,
    main_truncated: InterprocPath,
    f_truncated: InterprocPath,
}

fn cut_callee() -> CutCallee {
    let b = |f: u32, t: u32, kind| Edge { from: BlockId(f), to: BlockId(t), kind };
    let br = EdgeKind::Branch { succ: 0 };
    let main = Cfg::new(
        3,
        vec![
            b(0, 1, br),
            b(1, 2, br),
            b(1, 3, EdgeKind::Termination),
            b(2, 3, EdgeKind::Return),
            b(3, 0, EdgeKind::ExitToEntry),
        ],
    )
    .unwrap();
    let f =
        Cfg::new(1, vec![b(0, 1, EdgeKind::Return), b(0, 1, EdgeKind::Termination), b(1, 0, EdgeKind::ExitToEntry)])
            .unwrap();
    let (m, fp) = (ProcId(0), ProcId(1));
    let program = Program::new(vec![
        Procedure::new(main, vec![CallSite { block: BlockId(1), callee: Callee::Cut(fp) }]),
        Procedure::new(f, vec![]),
    ])
    .unwrap();
    let sg = Supergraph::build(program);
    assert_eq!(sg.calls().roles(), &[SiteRole::Cut]);
    assert_eq!(sg.calls().roots(), &[m, fp]);
    let step = |proc, block, via| Step { proc, block: BlockId(block), via };
    let upto_call = vec![step(m, 0, Via::RootEntry), step(m, 1, Via::Edge(EdgeId(0)))];
    let mut main_steps = upto_call.clone();
    main_steps.push(step(m, 2, Via::Summary { site: CallSiteId::from_index(0) }));
    CutCallee {
        sg,
        main_returns: InterprocPath { steps: main_steps, end: PathEnd::RootReturn { proc: m, edge: EdgeId(3) } },
        f_returns: InterprocPath {
            steps: vec![step(fp, 0, Via::RootEntry)],
            end: PathEnd::RootReturn { proc: fp, edge: EdgeId(0) },
        },
        main_truncated: InterprocPath { steps: upto_call, end: PathEnd::Termination { proc: m, edge: EdgeId(2) } },
        f_truncated: InterprocPath {
            steps: vec![step(fp, 0, Via::RootEntry)],
            end: PathEnd::Termination { proc: fp, edge: EdgeId(1) },
        },
    }
}

/// §9.2.1-style flush: a cut callee terminates; the callee's path ends at its termination edge and the caller's
/// pending path ends at the call block's termination edge.
#[test]
fn termination_in_a_cut_callee_flushes_the_pending_path() {
    let t = cut_callee();
    let exec =
        Execution { root: ProcId(0), events: vec![Event::Edge(EdgeId(0)), Event::Call, Event::Terminate(EdgeId(1))] };
    for mode in [Mode::Context, Mode::Piecewise] {
        let num = t.sg.number(mode).unwrap();
        assert_eq!(observed_paths(&t.sg, mode, &exec), vec![t.f_truncated.clone(), t.main_truncated.clone()]);
        let mut sim = Simulator::new(&num);
        sim.run(&exec).unwrap();
        let expected: Profile =
            [(encode(&num, &t.f_truncated).unwrap(), 1), (encode(&num, &t.main_truncated).unwrap(), 1)].into();
        assert_eq!(sim.profile(), &expected, "{mode:?}");
    }
}

/// Arrival counting, by hand: one run where `f` returns and one where it terminates. Both arrive at main's
/// call block and at `f`'s block (2 arrivals each); one of each went on, to the two returning paths. Net: every
/// path once — the pending path and `f`'s path were truncated in the second run only.
#[test]
fn arrivals_at_a_cut_call_net_to_the_one_run_that_did_not_return() {
    let t = cut_callee();
    let returns = Execution {
        root: ProcId(0),
        events: vec![Event::Edge(EdgeId(0)), Event::Call, Event::Return(EdgeId(0)), Event::Return(EdgeId(3))],
    };
    let terminates =
        Execution { root: ProcId(0), events: vec![Event::Edge(EdgeId(0)), Event::Call, Event::Terminate(EdgeId(1))] };
    for mode in [Mode::Context, Mode::Piecewise] {
        let num = t.sg.number(mode).unwrap();
        let n = |p: &InterprocPath| encode(&num, p).unwrap();
        let mut sim = Simulator::counting_arrivals(&num);
        sim.run(&returns).unwrap();
        sim.run(&terminates).unwrap();
        let arrivals: Profile =
            [(n(&t.main_truncated), 2), (n(&t.f_truncated), 2), (n(&t.main_returns), 1), (n(&t.f_returns), 1)].into();
        assert_eq!(sim.profile(), &arrivals, "{mode:?}");
        let raw: BTreeMap<u128, i128> = arrivals.iter().map(|(&k, &c)| (k, i128::from(c))).collect();
        let net = net_counts_from_arrivals(&num, &raw).unwrap();
        let got: Vec<(&InterprocPath, i128)> = net.values().map(|p| (&p.path, p.count)).collect();
        let mut want = vec![(&t.main_returns, 1), (&t.f_returns, 1), (&t.main_truncated, 1), (&t.f_truncated, 1)];
        want.sort_by_key(|(p, _)| n(p));
        assert_eq!(got, want, "{mode:?}");
        // Without the run that returned, its arrivals are missing: the continuations net the truncations to 0.
        let only_returns: BTreeMap<u128, i128> =
            [(n(&t.main_truncated), 1), (n(&t.f_truncated), 1), (n(&t.main_returns), 1), (n(&t.f_returns), 1)].into();
        let net = net_counts_from_arrivals(&num, &only_returns).unwrap();
        let mut went_on = vec![n(&t.main_returns), n(&t.f_returns)];
        went_on.sort();
        assert_eq!(net.keys().copied().collect::<Vec<_>>(), went_on, "{mode:?}");
        // A continuation without its arrival (an inconsistent profile) leaves a negative truncated path.
        let net = net_counts_from_arrivals(&num, &[(n(&t.main_returns), 1)].into()).unwrap();
        assert_eq!(net.get(&n(&t.main_truncated)).map(|p| (p.count, &p.path)), Some((-1, &t.main_truncated)));
    }
}

/// The budget policy's shortcut: re-cutting a built supergraph ([`Supergraph::with_cut`]) gives the roles and
/// numbering (ψ at every block, every out-arc, the path count, or the same error) of a supergraph built from
/// scratch for a program with those callees cut.
fn check_recut(seed: u64) {
    let mut rng = Rng::new(seed);
    let program = random_program(&mut rng);
    let cut: Vec<bool> = (0..program.num_procs()).map(|_| rng.chance(2)).collect();
    let fresh_procs: Vec<Procedure> = program
        .procs()
        .iter()
        .map(|p| {
            let mut p = p.clone();
            for cs in &mut p.call_sites {
                if let Callee::Proc(q) | Callee::Cut(q) = cs.callee {
                    cs.callee = if cut[q.index()] { Callee::Cut(q) } else { Callee::Proc(q) };
                }
            }
            p
        })
        .collect();
    let fresh = Supergraph::build(Program::new(fresh_procs).expect("same shape as a valid program"));
    let recut = Supergraph::build(program).with_cut(|q| cut[q.index()]);
    assert_eq!(recut.program(), fresh.program());
    assert_eq!(recut.calls().roles(), fresh.calls().roles());
    for mode in [Mode::Context, Mode::Piecewise] {
        match (recut.number(mode), fresh.number(mode)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.num_paths(), b.num_paths());
                for p in fresh.program().proc_ids() {
                    for v in 0..fresh.program().cfg(p).num_blocks() {
                        let v = BlockId(v as u32);
                        assert_eq!((a.psi(p, v), a.arcs(p, v)), (b.psi(p, v), b.arcs(p, v)), "seed {seed} {p} {v}");
                    }
                }
            }
            (a, b) => assert_eq!(a.err(), b.err(), "seed {seed}"),
        }
    }
}

#[test]
fn random_programs_smoke() {
    for seed in 0..64 {
        check_program(seed);
        check_garbage(seed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn dense_numbering_round_trip_and_exact_simulation(seed in any::<u64>()) {
        check_program(seed);
    }

    #[test]
    fn recutting_a_supergraph_equals_building_it_cut(seed in any::<u64>()) {
        check_recut(seed);
    }

    #[test]
    fn malformed_paths_and_traces_are_errors_not_panics(seed in any::<u64>()) {
        check_garbage(seed);
    }
}

/// A cut vertex must be a block other than the entry and every call block, listed once in increasing order.
#[test]
fn cut_vertices_are_validated() {
    // 0 → 1 (call block) → 2 (return site) → EXIT.
    let cfg = crate::graph::test_cfg(3, &[(0, 1), (1, 2)], &[2]);
    let with_cuts = |cuts: &[u32]| {
        let mut p = Procedure::new(cfg.clone(), vec![direct(1, 0)]);
        p.cut_vertices = cuts.iter().map(|&b| BlockId(b)).collect();
        Program::new(vec![p])
    };
    assert!(with_cuts(&[2]).is_ok());
    for bad in [&[0][..], &[1], &[3], &[2, 2]] {
        assert!(
            matches!(with_cuts(bad), Err(super::ProgramError::BadCutVertex { .. })),
            "cut vertices {bad:?} must be refused"
        );
    }
}

/// A reset header must be a block other than the entry, listed once in increasing order; a block that heads no
/// loop is accepted (it changes nothing).
#[test]
fn reset_headers_are_validated() {
    // 0 → 1 ⇄ 2, 1 → EXIT.
    let cfg = crate::graph::test_cfg(3, &[(0, 1), (1, 2), (2, 1)], &[1]);
    let with_resets = |resets: &[u32]| {
        let mut p = Procedure::new(cfg.clone(), vec![]);
        p.reset_headers = resets.iter().map(|&b| BlockId(b)).collect();
        Program::new(vec![p])
    };
    assert!(with_resets(&[1]).is_ok());
    assert!(with_resets(&[1, 2]).is_ok());
    for bad in [&[0][..], &[3], &[1, 1], &[2, 1]] {
        assert!(
            matches!(with_resets(bad), Err(super::ProgramError::BadResetHeader { .. })),
            "reset headers {bad:?} must be refused"
        );
    }
}
