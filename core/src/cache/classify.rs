//! Static cache simulation: abstract cache states over UPs × function instances (Mueller & Whalley's
//! Algorithm 2, generalised to LRU set-associative caches by must/may analysis) and the category of every line
//! reference and every instruction (Definition 9).
//!
//! For a reference to line `l` with must state `M` and may state `S` before it:
//! - **always-hit** if `l ∈ M` (cached on every path);
//! - **always-miss** if `l ∉ S` (cached on no path);
//! - **first-miss** if fewer than A other lines of `l`'s set are referenced anywhere the run can go after the
//!   reference — the *reaching state* (Definition 8), computed backwards over the supergraph. Then `l` is never
//!   evicted once this reference has run. This is Mueller & Whalley's "conflicting lines are not reachable"
//!   condition (A = 1), taken over *all* conflicting lines: their literal condition only looks at those in
//!   `S`, so a conflicting line not yet cached here but reachable may still evict `l` later (the property tests
//!   did not produce such a case — the group rule below demotes most of them — but the stricter condition is
//!   sound by the direct argument above and costs nothing measurable there);
//! - **conflict** otherwise.
//!
//! Group first misses (Definition 9's third clause, "all other instructions of the line are always-hit or
//! first-miss", §4.1): a line keeps first-miss references only if *every* reference to it anywhere is always-hit
//! or first-miss. Then the first reference to the line in a run is a first-miss one (an always-hit needs an
//! earlier access) and misses (the line was never loaded), and every later reference hits (the first one
//! evicted nothing after it): the line costs exactly one miss if any of its first-miss references ran. Other
//! lines' first-miss references become conflicts.
//!
//! Instructions: one that straddles lines is one access, a miss if any of its references misses. It is
//! always-miss if one reference is; always-hit if all are; otherwise the category of its only other reference;
//! with two or more first-miss/conflict references, they all become conflicts (simulated together).

use super::domain::{Kind, State};
use super::instances::InstanceGraph;
use super::program::{Geometry, Program};
use super::supergraph::{NodeKind, Supergraph};
use crate::melski_reps::program::ProcId;

/// The four categories of Definition 9.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Always a hit.
    AlwaysHit = 0,
    /// Always a miss.
    AlwaysMiss = 1,
    /// A miss at most once per run (once per line: group first miss).
    FirstMiss = 2,
    /// Not predicted: simulated at run time.
    Conflict = 3,
}

/// A reference into a tracked set that the run time simulates, in program order within its node.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SimRef {
    /// The line (dense id).
    pub line: u32,
    /// The tracked set (index into the run time's set table).
    pub set: u32,
    /// The conflict instruction (index within the node) whose outcome this reference decides, if any; other
    /// references only update the simulated state.
    pub decides: Option<u32>,
}

/// What the run time needs for one node: static counts and the references to simulate.
#[derive(Clone, Debug, Default)]
pub struct NodePlan {
    /// The function the node's code belongs to (`None` for virtual nodes).
    pub function: Option<ProcId>,
    /// Instructions (accesses) per execution.
    pub insns: u32,
    /// Instructions per execution in each [`Category`] (always-hit includes the trivial in-line hits).
    pub categories: [u32; 4],
    /// The lines of the node's first-miss instructions.
    pub first_miss: Vec<u32>,
    /// References into tracked sets, in order.
    pub sim: Vec<SimRef>,
    /// Whether the analysis reached the node (unreached nodes never run).
    pub reached: bool,
}

/// The result of static cache simulation: a plan per node, and the categories of every reference.
#[derive(Clone, Debug)]
pub struct CachePlan {
    /// The geometry analysed.
    pub geometry: Geometry,
    /// The supergraph analysed.
    pub graph: Supergraph,
    /// Per node.
    pub nodes: Vec<NodePlan>,
    /// Per node, per reference: its category.
    pub ref_categories: Vec<Vec<Category>>,
    /// Number of tracked sets (sets with a conflict instruction's reference).
    pub tracked_sets: usize,
    /// Lines with first-miss references.
    pub first_miss_lines: usize,
}

/// Abstract states before each node's first reference (`None`: not reached).
fn fixpoint(g: &Supergraph, kind: Kind, assoc: u32) -> Vec<Option<State>> {
    let n = g.nodes.len();
    let mut input: Vec<Option<State>> = vec![None; n];
    let mut queued = vec![false; n];
    let mut work: std::collections::VecDeque<u32> = std::collections::VecDeque::new();
    for &e in &g.entries {
        input[e as usize] = Some(State::default()); // cold cache
        queued[e as usize] = true;
        work.push_back(e);
    }
    while let Some(v) = work.pop_front() {
        queued[v as usize] = false;
        let mut out = input[v as usize].clone().expect("queued nodes have a state");
        for r in &g.nodes[v as usize].refs {
            out.access(&g.lines, assoc, r.line);
        }
        for &w in &g.nodes[v as usize].succ {
            let changed = match &mut input[w as usize] {
                None => {
                    input[w as usize] = Some(out.clone());
                    true
                }
                Some(s) => s.join(&out, kind, assoc),
            };
            if changed && !queued[w as usize] {
                queued[w as usize] = true;
                work.push_back(w);
            }
        }
    }
    input
}

/// Per node, the lines referenced anywhere the run can go after the node (Definition 8, from the node's end),
/// as bit sets over line ids.
fn reaching(g: &Supergraph) -> Vec<Vec<u64>> {
    let n = g.nodes.len();
    let words = g.lines.len().div_ceil(64);
    let mut pred: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (v, node) in g.nodes.iter().enumerate() {
        for &w in &node.succ {
            pred[w as usize].push(v as u32);
        }
    }
    let own: Vec<Vec<u64>> = g
        .nodes
        .iter()
        .map(|node| {
            let mut b = vec![0u64; words];
            for r in &node.refs {
                b[r.line as usize / 64] |= 1 << (r.line % 64);
            }
            b
        })
        .collect();
    let mut after = vec![vec![0u64; words]; n];
    let mut work: Vec<u32> = (0..n as u32).collect();
    let mut queued = vec![true; n];
    while let Some(v) = work.pop() {
        queued[v as usize] = false;
        // reach_in(v) = own(v) ∪ after(v); propagate into every predecessor's `after`.
        let reach_in: Vec<u64> = own[v as usize].iter().zip(&after[v as usize]).map(|(a, b)| a | b).collect();
        for &p in &pred[v as usize] {
            let mut changed = false;
            for (x, y) in after[p as usize].iter_mut().zip(&reach_in) {
                if *x | y != *x {
                    *x |= y;
                    changed = true;
                }
            }
            if changed && !queued[p as usize] {
                queued[p as usize] = true;
                work.push(p);
            }
        }
    }
    after
}

/// Runs the static cache simulation of `program` for `geometry` with at most `budget` instances.
pub fn classify(program: &Program, geometry: &Geometry, budget: usize) -> CachePlan {
    let g = Supergraph::build(program, geometry, budget);
    let assoc = geometry.assoc;
    let must = fixpoint(&g, Kind::Must, assoc);
    let may = fixpoint(&g, Kind::May, assoc);
    let after = reaching(&g);
    let lines = &g.lines;
    let has = |bits: &[u64], l: u32| bits[l as usize / 64] >> (l % 64) & 1 == 1;

    // Raw categories per reference.
    let mut cats: Vec<Vec<Category>> = Vec::with_capacity(g.nodes.len());
    for (v, node) in g.nodes.iter().enumerate() {
        let (Some(mut m), Some(mut s)) = (must[v].clone(), may[v].clone()) else {
            cats.push(vec![Category::Conflict; node.refs.len()]);
            continue;
        };
        let mut c = Vec::with_capacity(node.refs.len());
        for (j, r) in node.refs.iter().enumerate() {
            let cat = if m.contains(lines, r.line) {
                Category::AlwaysHit
            } else if !s.contains(lines, r.line) {
                Category::AlwaysMiss
            } else {
                let set = lines.set(r.line);
                let later = &node.refs[j + 1..];
                let conflicting = lines
                    .set_lines(set)
                    .iter()
                    .filter(|&&x| x != r.line && (has(&after[v], x) || later.iter().any(|q| q.line == x)))
                    .count();
                if conflicting < assoc as usize {
                    Category::FirstMiss
                } else {
                    Category::Conflict
                }
            };
            c.push(cat);
            m.access(lines, assoc, r.line);
            s.access(lines, assoc, r.line);
        }
        cats.push(c);
    }
    let reached: Vec<bool> = must.iter().map(Option::is_some).collect();

    // Instruction categories and the group rule, to a fixpoint (first-miss only ever turns into conflict).
    loop {
        let mut changed = false;
        let mut bad_line = vec![false; lines.len()];
        for (v, node) in g.nodes.iter().enumerate() {
            if !reached[v] {
                continue;
            }
            for_each_insn(&node.refs, |range| {
                let ic = insn_category(&cats[v][range.clone()]);
                for k in range {
                    let (l, c) = (node.refs[k].line as usize, cats[v][k]);
                    let fine = c == Category::AlwaysHit || (c == Category::FirstMiss && ic == Category::FirstMiss);
                    if !fine {
                        bad_line[l] = true;
                    }
                }
            });
        }
        for (v, node) in g.nodes.iter().enumerate() {
            if !reached[v] {
                continue;
            }
            for (k, r) in node.refs.iter().enumerate() {
                if cats[v][k] == Category::FirstMiss && bad_line[r.line as usize] {
                    cats[v][k] = Category::Conflict;
                    changed = true;
                }
            }
            let mut promote = Vec::new();
            for_each_insn(&node.refs, |range| {
                let open = range.clone().filter(|&k| matches!(cats[v][k], Category::FirstMiss | Category::Conflict));
                if open.clone().count() >= 2 && !range.clone().any(|k| cats[v][k] == Category::AlwaysMiss) {
                    promote.extend(open.filter(|&k| cats[v][k] == Category::FirstMiss));
                }
            });
            for k in promote {
                cats[v][k] = Category::Conflict;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }

    // Tracked sets: the sets of conflict instructions' references.
    let mut tracked: Vec<Option<u32>> = vec![None; lines.num_sets()];
    let mut ntracked = 0u32;
    for (v, node) in g.nodes.iter().enumerate() {
        if !reached[v] {
            continue;
        }
        for_each_insn(&node.refs, |range| {
            if insn_category(&cats[v][range.clone()]) == Category::Conflict {
                for k in range {
                    let s = lines.set(node.refs[k].line) as usize;
                    if tracked[s].is_none() {
                        tracked[s] = Some(ntracked);
                        ntracked += 1;
                    }
                }
            }
        });
    }

    let mut first_miss_lines = vec![false; lines.len()];
    let nodes: Vec<NodePlan> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(v, node)| {
            let function = match node.kind {
                NodeKind::Up { instance, .. } => Some(g.instances.instance(instance).proc),
                _ => None,
            };
            let mut plan = NodePlan { function, insns: node.insns, reached: reached[v], ..NodePlan::default() };
            if !reached[v] {
                return plan;
            }
            let mut with_refs = 0;
            for_each_insn(&node.refs, |range| {
                with_refs += 1;
                let ic = insn_category(&cats[v][range.clone()]);
                plan.categories[ic as usize] += 1;
                for k in range {
                    let r = node.refs[k];
                    if ic == Category::FirstMiss && cats[v][k] == Category::FirstMiss {
                        plan.first_miss.push(r.line);
                        first_miss_lines[r.line as usize] = true;
                    }
                    if let Some(t) = tracked[lines.set(r.line) as usize] {
                        let decides = (ic == Category::Conflict && cats[v][k] == Category::Conflict).then_some(r.insn);
                        plan.sim.push(SimRef { line: r.line, set: t, decides });
                    }
                }
            });
            plan.categories[Category::AlwaysHit as usize] += node.insns - with_refs;
            plan
        })
        .collect();
    CachePlan {
        geometry: *geometry,
        nodes,
        ref_categories: cats,
        tracked_sets: ntracked as usize,
        first_miss_lines: first_miss_lines.iter().filter(|&&x| x).count(),
        graph: g,
    }
}

/// Calls `f` with the index range of each instruction's references (references are grouped by instruction).
fn for_each_insn(refs: &[super::lines::LineRef], mut f: impl FnMut(std::ops::Range<usize>)) {
    let mut start = 0;
    while start < refs.len() {
        let mut end = start + 1;
        while end < refs.len() && refs[end].insn == refs[start].insn {
            end += 1;
        }
        f(start..end);
        start = end;
    }
}

/// The category of an instruction from its references' (see the module docs).
fn insn_category(c: &[Category]) -> Category {
    if c.contains(&Category::AlwaysMiss) {
        Category::AlwaysMiss
    } else {
        let open: Vec<Category> = c.iter().copied().filter(|&x| x != Category::AlwaysHit).collect();
        match open[..] {
            [] => Category::AlwaysHit,
            [one] => one,
            _ => Category::Conflict,
        }
    }
}

impl CachePlan {
    /// The instance graph analysed.
    pub fn instances(&self) -> &InstanceGraph {
        &self.graph.instances
    }
}

impl CachePlan {
    /// Per instruction of node `node`: its category and, for a first-miss instruction, the line of its
    /// first-miss reference (for reports and for checking the categories against a simulation).
    pub fn insn_categories(&self, node: usize) -> Vec<(Category, Option<u32>)> {
        let n = &self.graph.nodes[node];
        let cats = &self.ref_categories[node];
        let mut out = vec![(Category::AlwaysHit, None); n.insns as usize];
        for_each_insn(&n.refs, |range| {
            let ic = insn_category(&cats[range.clone()]);
            let fm = range.clone().find(|&k| cats[k] == Category::FirstMiss).map(|k| n.refs[k].line);
            out[n.refs[range.start].insn as usize] = (ic, if ic == Category::FirstMiss { fm } else { None });
        });
        out
    }
}
