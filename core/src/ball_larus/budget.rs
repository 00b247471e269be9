//! Cuts for huge path spaces: the deterministic search for a set of cut vertices that bounds every vertex's
//! NumPaths by a budget.
//!
//! [`PathDag::build_with_budget`] bounds NumPaths of every vertex by a budget (default
//! [`DEFAULT_PATH_BUDGET`] = 2^63, so path numbers fit an `i64`/`u64` register). A *cut* vertex v has each
//! real out-edge v→s (s ≠ EXIT) replaced by [`DagEdgeKind::SplitExit`] v→EXIT and [`DagEdgeKind::SplitEntry`]
//! ENTRY→s — instrumented exactly like a back edge — so NumPaths(v) drops to its out-degree. See
//! [`PathDag::build_with_budget`] for the deterministic choice of cut vertices.
//!
//! The search builds candidate DAGs ([`super::dag`]) and numbers them ([`super::numbering`]) to judge them, so
//! it lives here, after both, and the DAG itself knows nothing of numbering.

use super::dag::{assemble, DagEdgeKind, DagError, PathDag};
use super::numbering::{Numbering, NumberingError};
use crate::dfs::DfsInfo;
use crate::graph::{Adjacency, BlockId, Cfg};

/// The default bound on NumPaths(ENTRY) used by the pass: path numbers then fit a signed 64-bit register.
pub const DEFAULT_PATH_BUDGET: u128 = 1 << 63;

/// At most this many cuts are made by the greedy phase of [`PathDag::build_with_budget`] (each costs one
/// O(V + E) rebuild), which bounds its time on huge functions.
pub const MAX_GREEDY_CUTS: usize = 256;

impl PathDag {
    /// Builds the DAG and cuts it so that every vertex's NumPaths is at most `budget`.
    ///
    /// If the uncut DAG already fits, it is returned unchanged. Otherwise cut vertices are chosen in two
    /// deterministic phases, and the first cut set whose DAG fits is returned:
    ///
    /// 1. *Threshold passes* (old LLVM's rule, for large budgets): in reverse topological order, a vertex
    ///    v ≠ ENTRY whose NumPaths (over its already-decided successors) exceeds a threshold `t` and that has a
    ///    real out-edge to a block is cut, after which NumPaths(v) = out-degree(v). Each cut adds the NumPaths
    ///    of the cut edges' targets to ENTRY, so `t` starts at `budget` and is halved until ENTRY fits (at most
    ///    ~128 passes of O(V + E)). This keeps path segments as long as the budget allows.
    /// 2. *Greedy descent* (for small budgets, where phase 1 cuts too much): starting uncut, repeatedly cut the
    ///    vertex whose cut lowers NumPaths(ENTRY) the most — exactly `pf(v)·(NumPaths(v) − deg(v)) −
    ///    pf(ENTRY)·Σ NumPaths(cut targets)`, with `pf` the number of ENTRY→v prefixes — ties to the lower
    ///    vertex, at most [`MAX_GREEDY_CUTS`] cuts, stopping when no cut helps.
    ///
    /// The cuts are recorded in the DAG ([`PathDag::cut_edges`], [`PathDag::cut_vertices`],
    /// [`PathDag::cfg_edge_role`] = [`CfgEdgeRole::Cut`](super::dag::CfgEdgeRole::Cut), edge kinds
    /// [`DagEdgeKind::SplitEntry`] / [`DagEdgeKind::SplitExit`]), so decoding stays exact and the CLI recomputes
    /// the same DAG from the cfg and the budget alone.
    ///
    /// Fails with [`DagError::BudgetUnreachable`] when neither phase reaches the budget. That is unavoidable
    /// for small budgets: the entry's own successors cannot be cut (three returning successors are three
    /// paths), and every segment boundary costs distinct path numbers. Fails with [`DagError::DfsMismatch`]
    /// if `dfs` does not belong to `cfg`.
    pub fn build_with_budget(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, budget: u128) -> Result<PathDag, DagError> {
        PathDag::build_with_budget_keeping(cfg, adj, dfs, budget, |_| false)
    }

    /// Path mode's DAG: [`PathDag::build_with_budget`], with the loop resets of [`super::resets::loop_resets`]
    /// under `resets` (a module's `ModuleMeta::path_loop_resets`). The pass and every reader build it alike.
    pub fn build_for_path_mode(
        cfg: &Cfg,
        adj: &Adjacency,
        dfs: &DfsInfo,
        budget: u128,
        resets: super::resets::ResetRule,
    ) -> Result<PathDag, DagError> {
        let reset = super::resets::loop_resets(cfg, adj, dfs, resets);
        PathDag::build_with_budget_resetting(cfg, adj, dfs, budget, |_| false, &reset)
    }

    /// [`PathDag::build_with_budget`], never cutting a vertex `keep` names: the interprocedural modes keep a call
    /// site's block (its out-edge stands for the call) and an edge that cannot carry code whole.
    pub fn build_with_budget_keeping(
        cfg: &Cfg,
        adj: &Adjacency,
        dfs: &DfsInfo,
        budget: u128,
        keep: impl Fn(BlockId) -> bool,
    ) -> Result<PathDag, DagError> {
        PathDag::build_with_budget_resetting(cfg, adj, dfs, budget, keep, &vec![false; cfg.num_vertices()])
    }

    /// [`PathDag::build_with_budget_keeping`] with the loop headers `reset` marks restarting their paths
    /// (`dag::assemble`): the interprocedural modes cut a procedure's own paths after choosing its resets.
    pub fn build_with_budget_resetting(
        cfg: &Cfg,
        adj: &Adjacency,
        dfs: &DfsInfo,
        budget: u128,
        keep: impl Fn(BlockId) -> bool,
        reset: &[bool],
    ) -> Result<PathDag, DagError> {
        let base = assemble(cfg, adj, dfs, &vec![false; cfg.num_vertices()], reset);
        let mut achieved = match fits(&base, budget) {
            Fit::Yes => return Ok(base),
            Fit::No(a) => a,
            Fit::NotADag => return Err(DagError::DfsMismatch),
        };
        let entry = base.entry();
        let exit = base.exit();
        let cuttable = |dag: &PathDag, v: BlockId| {
            v != entry
                && v != exit
                && !keep(v)
                && dag.out_edges(v).iter().any(|&d| {
                    let e = *dag.edge(d);
                    matches!(e.kind, DagEdgeKind::Real(_)) && e.to != exit
                })
        };

        // Phase 1: threshold passes over the uncut DAG in reverse topological order. Cutting v only adds edges
        // out of ENTRY and into EXIT, so the uncut topological order stays valid for every cut DAG.
        let mut threshold = budget;
        let mut previous: Option<Vec<bool>> = None;
        loop {
            let mut cut = vec![false; base.num_vertices()];
            let mut np: Vec<Option<u128>> = vec![Some(0); base.num_vertices()];
            np[exit.index()] = Some(1);
            for &v in base.topological_order().iter().rev() {
                if v == exit || v == entry {
                    continue;
                }
                let outs = base.out_edges(v);
                let mut sum = Some(0u128);
                for &d in outs {
                    let to = base.edge(d).to;
                    sum = sum.and_then(|s| np.get(to.index()).copied().flatten().and_then(|x| s.checked_add(x)));
                }
                if !matches!(sum, Some(s) if s <= threshold) && cuttable(&base, v) {
                    cut[v.index()] = true;
                    sum = Some(outs.len() as u128);
                }
                np[v.index()] = sum;
            }
            if previous.as_ref() != Some(&cut) {
                let dag = assemble(cfg, adj, dfs, &cut, reset);
                match fits(&dag, budget) {
                    Fit::Yes => return Ok(dag),
                    Fit::No(a) => achieved = achieved.min(a),
                    Fit::NotADag => return Err(DagError::DfsMismatch),
                }
                previous = Some(cut);
            }
            if threshold <= 1 {
                break;
            }
            threshold /= 2;
        }

        // Phase 2: greedy descent on NumPaths(ENTRY), exact gains (saturating only beyond u128).
        let mut cut = vec![false; base.num_vertices()];
        let mut dag = base;
        for _ in 0..MAX_GREEDY_CUTS {
            let (np, pf) = saturating_counts(&dag);
            let factor = pf[entry.index()];
            let mut best: Option<(u128, BlockId)> = None;
            for &v in dag.topological_order() {
                if cut[v.index()] || !cuttable(&dag, v) {
                    continue;
                }
                let outs = dag.out_edges(v);
                let saved = pf[v.index()].saturating_mul(np[v.index()].saturating_sub(outs.len() as u128));
                let restart: u128 = outs
                    .iter()
                    .map(|&d| *dag.edge(d))
                    .filter(|e| matches!(e.kind, DagEdgeKind::Real(_)) && e.to != exit)
                    .fold(0u128, |acc, e| acc.saturating_add(np[e.to.index()]));
                let cost = factor.saturating_mul(restart);
                if saved <= cost {
                    continue;
                }
                let gain = saved - cost;
                // Strictly better gain, ties to the lower vertex index.
                if !matches!(best, Some((g, w)) if g > gain || (g == gain && w < v)) {
                    best = Some((gain, v));
                }
            }
            let Some((_, v)) = best else { break };
            cut[v.index()] = true;
            dag = assemble(cfg, adj, dfs, &cut, reset);
            match fits(&dag, budget) {
                Fit::Yes => return Ok(dag),
                Fit::No(a) => achieved = achieved.min(a),
                Fit::NotADag => return Err(DagError::DfsMismatch),
            }
        }
        Err(DagError::BudgetUnreachable { budget, achieved })
    }
}

/// How a candidate DAG compares with the budget.
enum Fit {
    Yes,
    /// Does not fit; NumPaths(ENTRY) or `u128::MAX` on overflow.
    No(u128),
    NotADag,
}

fn fits(dag: &PathDag, budget: u128) -> Fit {
    match Numbering::compute(dag) {
        Ok(n) => {
            let max = dag.topological_order().iter().map(|&v| n.num_paths_from(v)).max().unwrap_or(0);
            if max <= budget {
                Fit::Yes
            } else {
                Fit::No(n.num_paths())
            }
        }
        Err(NumberingError::TooManyPaths { .. }) => Fit::No(u128::MAX),
        Err(NumberingError::NotADag { .. }) => Fit::NotADag,
    }
}

/// NumPaths and forward path counts pf (ENTRY→v prefixes, a leading ENTRY self-loop included) per vertex,
/// saturating at `u128::MAX`; the heuristic of the greedy cut phase (validity is always rechecked exactly).
pub(super) fn saturating_counts(dag: &PathDag) -> (Vec<u128>, Vec<u128>) {
    let nv = dag.num_vertices();
    let (entry, exit) = (dag.entry(), dag.exit());
    let mut np = vec![0u128; nv];
    for &v in dag.topological_order().iter().rev() {
        if v == exit {
            np[v.index()] = 1;
            continue;
        }
        let outs = dag.out_edges(v);
        let plain = outs
            .iter()
            .map(|&d| dag.edge(d).to)
            .filter(|&w| w != v)
            .fold(0u128, |acc, w| acc.saturating_add(np[w.index()]));
        let loops = outs.iter().filter(|&&d| dag.edge(d).to == v).count() as u128;
        np[v.index()] = plain.saturating_mul(loops.saturating_add(1));
    }
    let mut pf = vec![0u128; nv];
    let loops = dag.out_edges(entry).iter().filter(|&&d| dag.edge(d).to == entry).count() as u128;
    pf[entry.index()] = loops.saturating_add(1);
    for &v in dag.topological_order() {
        for &d in dag.out_edges(v) {
            let w = dag.edge(d).to;
            if w != v {
                pf[w.index()] = pf[w.index()].saturating_add(pf[v.index()]);
            }
        }
    }
    (np, pf)
}
