//! Counting hits and misses during a run from the static categories, simulating only the tracked sets
//! (Mueller & Whalley §4.1): what the run time does at each UP's measurement point.
//!
//! Per UP execution: its counter; the first-miss lines it references are marked (a line's first mark is its one
//! miss, charged to the function that made it); and its references into tracked sets — the sets a conflict
//! instruction references — are applied to an exact LRU model of those sets, in program order, deciding the
//! conflict instructions. Always-hit and always-miss instructions are never looked at during the run: they
//! count through the UP counters at the end. The result equals a full simulation of every fetch (the
//! categories are sound, the tracked sets see every reference made to them, and untracked sets decide nothing).

use super::classify::{CachePlan, Category};

/// Accesses, misses and executed instructions per category, for one function or the whole program.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Instruction fetches (cachegrind's `Ir`).
    pub accesses: u64,
    /// Fetches that missed (cachegrind's `I1mr`).
    pub misses: u64,
    /// Fetches per [`Category`] (always-hit, always-miss, first-miss, conflict).
    pub categories: [u64; 4],
}

impl Counts {
    /// Fetches that hit.
    pub fn hits(&self) -> u64 {
        self.accesses - self.misses
    }
    fn add(&mut self, o: &Counts) {
        self.accesses += o.accesses;
        self.misses += o.misses;
        for (a, b) in self.categories.iter_mut().zip(o.categories) {
            *a += b;
        }
    }
}

/// The run-time state: UP counters, first-miss marks, the tracked sets and the conflict misses.
#[derive(Clone, Debug)]
pub struct OnTheFly<'a> {
    plan: &'a CachePlan,
    counts: Vec<u64>,
    first_miss_seen: Vec<bool>,
    sets: Vec<Vec<u32>>,
    dynamic_misses: Vec<u64>,
}

impl<'a> OnTheFly<'a> {
    /// A run about to start (cold cache).
    pub fn new(plan: &'a CachePlan) -> OnTheFly<'a> {
        let nf = plan.graph.uppas.len();
        OnTheFly {
            plan,
            counts: vec![0; plan.nodes.len()],
            first_miss_seen: vec![false; plan.graph.lines.len()],
            sets: vec![Vec::new(); plan.tracked_sets],
            dynamic_misses: vec![0; nf],
        }
    }

    /// One execution of node `node` (a UP in an instance), in execution order.
    pub fn up(&mut self, node: u32) {
        let p = &self.plan.nodes[node as usize];
        self.counts[node as usize] += 1;
        let Some(f) = p.function else { return };
        for &l in &p.first_miss {
            if !std::mem::replace(&mut self.first_miss_seen[l as usize], true) {
                self.dynamic_misses[f.index()] += 1;
            }
        }
        let assoc = self.plan.geometry.assoc as usize;
        let mut last_counted = None;
        for r in &p.sim {
            let hit = super::lru::reference(&mut self.sets[r.set as usize], r.line, assoc);
            if !hit && r.decides.is_some() && r.decides != last_counted {
                self.dynamic_misses[f.index()] += 1;
                last_counted = r.decides;
            }
        }
    }

    /// Per function (indexed by `ProcId`) and in total: the counts of the run so far.
    pub fn report(&self) -> (Vec<Counts>, Counts) {
        let mut per = vec![Counts::default(); self.dynamic_misses.len()];
        for (p, &c) in self.plan.nodes.iter().zip(&self.counts) {
            let Some(f) = p.function else { continue };
            let x = &mut per[f.index()];
            x.accesses += c * u64::from(p.insns);
            x.misses += c * u64::from(p.categories[Category::AlwaysMiss as usize]);
            for (a, &b) in x.categories.iter_mut().zip(&p.categories) {
                *a += c * u64::from(b);
            }
        }
        for (x, &m) in per.iter_mut().zip(&self.dynamic_misses) {
            x.misses += m;
        }
        let mut total = Counts::default();
        for x in &per {
            total.add(x);
        }
        (per, total)
    }
}
