//! Checkers for a witness placement: Trace(Ewit) and the blocking property, by the papers' definitions.
//!
//! Ball & Larus, TOPLAS 16(3), 1994, §4.1: witness(p, q) = {w | p→q writes w} ∪ {w | x→y writes w and there
//! is a witness-free path p→q→…→x} ∪ {EOF | there is a witness-free path p→q→…→EXIT}; Ewit solves the tracing
//! problem iff for every predicate the witness sets of its out-edges are pairwise disjoint. §4.2: Ewit has the
//! blocking property iff no predicate has a witness-free path to EXIT or to a vertex containing a call.
//!
//! Witnesses are identified by their edges here (the papers assume distinct witnesses), so the sets are
//! computed once, as bit sets over the witnessed edges plus EOF: R(v) = ⋃ over v's traced out-edges e of
//! ({e} if e is witnessed, else R(target e)), with EOF ∈ R(EXIT); a fixpoint, so cycles of unwitnessed edges
//! (which violate Trace) are handled too.

use super::placement::WitnessPlan;
use super::view::{CallSites, TracingView};
use crate::graph::{BlockId, Cfg, EdgeId};

/// A member of a witness set: the witness a given edge writes, or EOF.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WitnessOf {
    /// The witness written by this edge.
    Edge(EdgeId),
    /// The end of the trace (of the activation, for single-procedure placements).
    Eof,
}

/// Why a placement does not let the trace be regenerated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceViolation {
    /// Trace(Ewit) fails: two out-edges of a predicate share a witness, so a trace cannot tell them apart.
    #[error("predicate {predicate}: edges {first} and {second} both admit witness {witness:?}")]
    NotDisjoint {
        /// The predicate.
        predicate: BlockId,
        /// The lower out-edge.
        first: EdgeId,
        /// The higher out-edge.
        second: EdgeId,
        /// One witness in both sets.
        witness: WitnessOf,
    },
    /// The blocking property fails: `predicate` has a witness-free path, starting with `edge`, to EXIT or to a
    /// call, so a witness would still be pending when the callee's trace (or the caller's) is written.
    #[error("predicate {predicate} has a witness-free path through {edge} to a call or EXIT")]
    NotBlocking {
        /// The predicate.
        predicate: BlockId,
        /// Its unwitnessed out-edge the path starts with.
        edge: EdgeId,
    },
    /// The plan was made for another CFG.
    #[error("the witness plan has {plan} edges, the CFG {cfg}")]
    Mismatch {
        /// Edges in the plan.
        plan: usize,
        /// Edges in the CFG.
        cfg: usize,
    },
}

/// Witness sets of every (predicate, out-edge) pair, as bit sets.
pub(crate) struct WitnessSets {
    words: usize,
    /// Witnessed edges in `EdgeId` order; bit i stands for `witnessed[i]`, bit `witnessed.len()` for EOF.
    witnessed: Vec<EdgeId>,
    bit_of: Vec<Option<usize>>,
    reach: Vec<u64>,
}

impl WitnessSets {
    pub(crate) fn compute(cfg: &Cfg, view: &TracingView, plan: &WitnessPlan) -> WitnessSets {
        let witnessed: Vec<EdgeId> = plan.witnessed().collect();
        let mut bit_of = vec![None; cfg.num_edges()];
        for (i, e) in witnessed.iter().enumerate() {
            bit_of[e.index()] = Some(i);
        }
        let words = (witnessed.len() + 1).div_ceil(64);
        let mut sets = WitnessSets { words, witnessed, bit_of, reach: vec![0; words * view.num_vertices()] };
        let eof = sets.witnessed.len();
        let exit = cfg.exit().index();
        sets.reach[exit * words + eof / 64] |= 1 << (eof % 64);
        // Fixpoint: sets only grow, each round is monotone, so it ends after at most |bits| × |V| rounds; in
        // practice (E − Ewit acyclic) after the longest unwitnessed path.
        let mut buf = vec![0u64; words];
        loop {
            let mut changed = false;
            for v in (0..view.num_vertices()).rev() {
                buf.copy_from_slice(&sets.reach[v * words..(v + 1) * words]);
                for &e in view.out_edges(BlockId::from_index(v)) {
                    sets.union_edge_set(cfg, e, &mut buf);
                }
                let cur = &mut sets.reach[v * words..(v + 1) * words];
                if cur != buf.as_slice() {
                    cur.copy_from_slice(&buf);
                    changed = true;
                }
            }
            if !changed {
                return sets;
            }
        }
    }

    /// `acc ∪= witness(src e, target e)`.
    fn union_edge_set(&self, cfg: &Cfg, e: EdgeId, acc: &mut [u64]) {
        match self.bit_of[e.index()] {
            Some(b) => acc[b / 64] |= 1 << (b % 64),
            None => {
                let t = cfg.edge(e).to.index();
                for (a, r) in acc.iter_mut().zip(&self.reach[t * self.words..(t + 1) * self.words]) {
                    *a |= r;
                }
            }
        }
    }

    /// witness(src e, target e), as members.
    pub(crate) fn of_edge(&self, cfg: &Cfg, e: EdgeId) -> Vec<WitnessOf> {
        let mut acc = vec![0u64; self.words];
        self.union_edge_set(cfg, e, &mut acc);
        self.members(&acc)
    }

    fn members(&self, set: &[u64]) -> Vec<WitnessOf> {
        let mut out = Vec::new();
        for (w, &word) in set.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let b = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                out.push(if b == self.witnessed.len() { WitnessOf::Eof } else { WitnessOf::Edge(self.witnessed[b]) });
            }
        }
        out
    }

    /// Whether EOF is in a predicate's witness set (then returns must write EOF).
    pub(crate) fn needs_eof(&self, cfg: &Cfg, view: &TracingView) -> bool {
        cfg.vertices()
            .filter(|&v| view.is_predicate(v))
            .any(|v| view.out_edges(v).iter().any(|&e| self.of_edge(cfg, e).last() == Some(&WitnessOf::Eof)))
    }

    /// The first predicate (in vertex order) whose out-edges' sets overlap.
    pub(crate) fn first_overlap(&self, cfg: &Cfg, view: &TracingView) -> Option<TraceViolation> {
        let mut union = vec![0u64; self.words];
        let mut one = vec![0u64; self.words];
        for p in cfg.vertices().filter(|&v| view.is_predicate(v)) {
            union.fill(0);
            let outs = view.out_edges(p);
            for (j, &e) in outs.iter().enumerate() {
                one.fill(0);
                self.union_edge_set(cfg, e, &mut one);
                if union.iter().zip(&one).any(|(a, b)| a & b != 0) {
                    // Find the earlier edge it clashes with, and one shared witness.
                    for &f in &outs[..j] {
                        let mut other = vec![0u64; self.words];
                        self.union_edge_set(cfg, f, &mut other);
                        let common: Vec<u64> = other.iter().zip(&one).map(|(a, b)| a & b).collect();
                        if let Some(&witness) = self.members(&common).first() {
                            return Some(TraceViolation::NotDisjoint { predicate: p, first: f, second: e, witness });
                        }
                    }
                }
                for (a, b) in union.iter_mut().zip(&one) {
                    *a |= b;
                }
            }
        }
        None
    }
}

/// Trace(Ewit) of §4.1: `Ok` iff the witness sets of every predicate's out-edges are pairwise disjoint.
pub fn check_trace(cfg: &Cfg, plan: &WitnessPlan) -> Result<(), TraceViolation> {
    if plan.num_edges() != cfg.num_edges() {
        return Err(TraceViolation::Mismatch { plan: plan.num_edges(), cfg: cfg.num_edges() });
    }
    let view = TracingView::new(cfg, &CallSites::none(cfg));
    match WitnessSets::compute(cfg, &view, plan).first_overlap(cfg, &view) {
        Some(v) => Err(v),
        None => Ok(()),
    }
}

/// The blocking property of §4.2: `Ok` iff no predicate has a witness-free path (of at least one edge) to EXIT,
/// to a block with call sites, or to a block that may be left abnormally.
pub fn check_blocking(cfg: &Cfg, calls: &CallSites, plan: &WitnessPlan) -> Result<(), TraceViolation> {
    check_blocking_of(cfg, &TracingView::new(cfg, calls), plan, true)
}

/// The blocking check, with EXIT among the blocked vertices or not (returns that write EOF need no blocking).
pub(crate) fn check_blocking_of(
    cfg: &Cfg,
    view: &TracingView,
    plan: &WitnessPlan,
    exit_too: bool,
) -> Result<(), TraceViolation> {
    if plan.num_edges() != cfg.num_edges() {
        return Err(TraceViolation::Mismatch { plan: plan.num_edges(), cfg: cfg.num_edges() });
    }
    // reaches[v]: v is blocked or has a witness-free path to a blocked vertex (backward search).
    let mut reaches = vec![false; cfg.num_vertices()];
    let mut stack: Vec<BlockId> =
        cfg.vertices().filter(|&v| view.is_blocked(v) && (exit_too || v != cfg.exit())).collect();
    for &v in &stack {
        reaches[v.index()] = true;
    }
    while let Some(x) = stack.pop() {
        for &e in view.in_edges(x) {
            let u = cfg.edge(e).from;
            if !plan.is_witnessed(e) && !reaches[u.index()] {
                reaches[u.index()] = true;
                stack.push(u);
            }
        }
    }
    for p in cfg.vertices().filter(|&v| view.is_predicate(v)) {
        for &e in view.out_edges(p) {
            if !plan.is_witnessed(e) && reaches[cfg.edge(e).to.index()] {
                return Err(TraceViolation::NotBlocking { predicate: p, edge: e });
            }
        }
    }
    Ok(())
}

/// witness(G, Ewit, p, q) of §4.1 for the out-edge `e` = p → q, sorted (edges in `EdgeId` order, EOF last).
pub fn witness_set(cfg: &Cfg, plan: &WitnessPlan, e: EdgeId) -> Vec<WitnessOf> {
    let view = TracingView::new(cfg, &CallSites::none(cfg));
    WitnessSets::compute(cfg, &view, plan).of_edge(cfg, e)
}
