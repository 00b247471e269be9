//! Where witnesses go: blocking witnesses, then the chords of a maximum spanning tree (TOPLAS'94 §4.2), or
//! every out-edge of every predicate (bit tracing, §6.2).
//!
//! Ball & Larus, "Optimally Profiling and Tracing Programs", TOPLAS 16(3), 1994, §4; Ball's thesis §3.2 and
//! §3.4.2. Two-step placement, in this order (doing it the other way round can cost more, §4.2 Figure 16):
//! 1. for EXIT and every blocked vertex v (call sites, blocks left abnormally), witness [`blockers`]`(v)`: the
//!    out-edge of the nearest predicate on every predicate-free path into v, "as far from call vertices as
//!    possible", so no predicate has a witness-free path to a call or to EXIT;
//! 2. a maximum spanning forest of the remaining traced edges under the caller's weighting (edge mode's, so
//!    hot edges stay unwitnessed); every edge outside it writes a witness.
//!
//! E − Ewit is then a forest, hence has no diamond and no directed cycle, which is exactly Trace(Ewit) (§4.1).
//! Witness values are dense, in `EdgeId` order, so a CFG with n witnesses needs ⌈log2 n⌉ bits per witness.

use super::view::{bits_for, CallSites, TracingView};
use crate::graph::{BlockId, Cfg, EdgeId};
use crate::spanning::{max_spanning_tree_of, SpanningError};

/// How the witnesses of a [`WitnessPlan`] are valued.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Distinct values `0..n` on a set of edges (spanning-tree or hand placement); a witness may stay pending
    /// across vertices until its edge is crossed.
    Unique,
    /// Bit tracing: every out-edge of every predicate writes its position among the predicate's out-edges, so
    /// an N-way predicate costs ⌈log2 N⌉ bits and nothing is ever pending.
    BitTracing,
}

/// Which vertices the placement blocks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Blocking {
    /// §4.2: calls and EXIT, so the traces of many procedures interleave in one stream without buffering.
    CallsAndExit,
    /// §4.1, single procedure: no blocking witnesses; returns write EOF instead. Only for functions without
    /// calls (the thesis's Figure 3.11 example).
    SingleProcedure,
}

/// The witnessed edges of one function and the value each writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WitnessPlan {
    scheme: Scheme,
    value: Vec<Option<u32>>,
    num_values: u32,
}

/// Why witnesses could not be placed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// The weighting does not fit the CFG (count or NaN).
    #[error(transparent)]
    Spanning(#[from] SpanningError),
    /// A hand placement names an edge twice or an edge outside the CFG.
    #[error("witness edge {0} is repeated or not an edge of the CFG")]
    BadEdge(EdgeId),
}

impl WitnessPlan {
    /// Distinct witnesses `0, 1, …` on `edges`, in the order given (hand placements, the papers' examples).
    pub fn from_edges(cfg: &Cfg, edges: &[EdgeId]) -> Result<WitnessPlan, PlacementError> {
        let mut value = vec![None; cfg.num_edges()];
        for (i, &e) in edges.iter().enumerate() {
            match value.get_mut(e.index()) {
                Some(slot @ None) => *slot = Some(i as u32),
                _ => return Err(PlacementError::BadEdge(e)),
            }
        }
        Ok(WitnessPlan { scheme: Scheme::Unique, value, num_values: edges.len() as u32 })
    }

    /// How the values are assigned.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The value `e` writes, if it writes one.
    pub fn value(&self, e: EdgeId) -> Option<u32> {
        self.value.get(e.index()).copied().flatten()
    }

    /// Whether crossing `e` writes a witness.
    pub fn is_witnessed(&self, e: EdgeId) -> bool {
        self.value(e).is_some()
    }

    /// The witnessed edges, in `EdgeId` order.
    pub fn witnessed(&self) -> impl Iterator<Item = EdgeId> + '_ {
        self.value.iter().enumerate().filter(|(_, v)| v.is_some()).map(|(i, _)| EdgeId::from_index(i))
    }

    /// Distinct witness values (for [`Scheme::BitTracing`], the widest predicate's out-degree).
    pub fn num_values(&self) -> u32 {
        self.num_values
    }

    pub(crate) fn num_edges(&self) -> usize {
        self.value.len()
    }
}

/// `blockers(G, v)` of §4.2: `{p → x0 | p → x0 → … → xn = v, p a predicate, x0..x(n−1) not predicates}`, in
/// `EdgeId` order.
pub fn blockers(cfg: &Cfg, calls: &CallSites, v: BlockId) -> Vec<EdgeId> {
    let view = TracingView::new(cfg, calls);
    let mut out = vec![false; cfg.num_edges()];
    mark_blockers(cfg, &view, v, &mut out, &mut vec![false; cfg.num_vertices()]);
    out.iter().enumerate().filter(|(_, &b)| b).map(|(i, _)| EdgeId::from_index(i)).collect()
}

/// Marks blockers(v) in `out`; `seen` are non-predicate vertices already walked back through (shared between
/// calls: what was reached from one blocked vertex has had its blockers marked).
fn mark_blockers(cfg: &Cfg, view: &TracingView, v: BlockId, out: &mut [bool], seen: &mut [bool]) {
    let mut stack = vec![v];
    while let Some(x) = stack.pop() {
        for &e in view.in_edges(x) {
            let p = cfg.edge(e).from;
            if view.is_predicate(p) {
                out[e.index()] = true;
            } else if !seen[p.index()] {
                seen[p.index()] = true;
                stack.push(p);
            }
        }
    }
}

/// The two-step placement of the module docs. `weights` has one entry per edge of `cfg` (edge mode's
/// weighting); ties go to the lower `EdgeId`, so the plan is a pure function of its inputs.
pub fn place_witnesses(
    cfg: &Cfg,
    calls: &CallSites,
    weights: &[f64],
    blocking: Blocking,
) -> Result<WitnessPlan, PlacementError> {
    if weights.len() != cfg.num_edges() {
        return Err(SpanningError::WeightCountMismatch { edges: cfg.num_edges(), weights: weights.len() }.into());
    }
    let view = TracingView::new(cfg, calls);
    let mut witnessed = vec![false; cfg.num_edges()];
    if blocking == Blocking::CallsAndExit {
        let mut seen = vec![false; cfg.num_vertices()];
        for v in cfg.vertices().filter(|&v| view.is_blocked(v)) {
            mark_blockers(cfg, &view, v, &mut witnessed, &mut seen);
        }
    }
    // The spanning forest may use only traced edges that are not witnessed yet (footnote 4: a maximal-cost
    // acyclic subset when they do not span).
    let candidates: Vec<EdgeId> =
        cfg.edge_ids().filter(|&e| super::view::is_traced(cfg.edge(e).kind) && !witnessed[e.index()]).collect();
    let ends: Vec<(BlockId, BlockId)> = candidates.iter().map(|&e| (cfg.edge(e).from, cfg.edge(e).to)).collect();
    let w: Vec<f64> = candidates.iter().map(|&e| weights[e.index()]).collect();
    let in_tree = max_spanning_tree_of(cfg.num_vertices(), &ends, &w, &[]).map_err(|err| match err {
        SpanningError::NanWeight { edge } => SpanningError::NanWeight { edge: candidates[edge.index()] },
        other => other,
    })?;
    for (&e, &t) in candidates.iter().zip(&in_tree) {
        witnessed[e.index()] = !t;
    }
    let edges: Vec<EdgeId> = cfg.edge_ids().filter(|&e| witnessed[e.index()]).collect();
    WitnessPlan::from_edges(cfg, &edges)
}

/// Bit tracing (thesis §3.4.2, TOPLAS'94 §6.2): out-edge `i` of every predicate writes `i`.
pub fn bit_tracing(cfg: &Cfg) -> WitnessPlan {
    bit_tracing_with(cfg, &CallSites::none(cfg))
}

/// Bit tracing of a function with `invoke`s ([`CallSites::with_invokes`]): an `invoke`'s unwind edge is no
/// decision (its landing pad writes an unwind marker), so the `invoke` block is no predicate.
pub fn bit_tracing_with(cfg: &Cfg, calls: &CallSites) -> WitnessPlan {
    let view = TracingView::new(cfg, calls);
    let mut value = vec![None; cfg.num_edges()];
    let mut num_values = 0;
    for v in cfg.vertices().filter(|&v| view.is_predicate(v)) {
        let outs = view.out_edges(v);
        for (i, &e) in outs.iter().enumerate() {
            value[e.index()] = Some(i as u32);
        }
        num_values = num_values.max(outs.len() as u32);
    }
    WitnessPlan { scheme: Scheme::BitTracing, value, num_values }
}

/// Bits one witness token takes when read at `v` under `plan`: ⌈log2 n⌉ for `n` values in a function (EOF
/// included when returns write it), ⌈log2 N⌉ at an N-way predicate under bit tracing.
pub(crate) fn token_width(plan: &WitnessPlan, view: &TracingView, v: BlockId, eof: bool) -> u8 {
    match plan.scheme {
        Scheme::Unique => bits_for(u64::from(plan.num_values) + u64::from(eof)),
        Scheme::BitTracing => bits_for(view.out_edges(v).len() as u64),
    }
}
