//! Context and piecewise modes: which blocks' `pathNum` carries a potential, so that the edge values go on the
//! chords of a spanning tree instead of on the edges the numbering gives them to
//! (`pathprof_core::interproc::potentials`).
//!
//! By default only in dispatch functions (a join of 32+ predecessors, [`crate::weights::is_dispatch_function`]),
//! with the weights edge mode uses there (critical edges priced so the tree takes them). The numbering gives
//! the value 0 to each vertex's first out-edge, whatever it costs, so pcre2 10.42's `match()` put 1,409 values
//! on critical edges (edge mode after pricing: 1,088 split edges in the whole file), many of them several
//! `switch` cases into one target with different values, which no PHI can merge: the blocks splitting them stay
//! between the `switch` and its join, and LLVM 19's first CorrelatedValuePropagation ran for minutes
//! (llvm/llvm-project#130110, see `weights.rs`). Elsewhere the numbering's own placement is kept (its code is
//! what the interprocedural benchmarks measured). The tree's weights are always LLVM's estimate with edge mode's
//! pricing (`PATHPROF_WEIGHTS` is not consulted here): like all weights, they decide only what the code costs.

use crate::cfg_build::Site;
use crate::config::{Config, IpPlacement, Weighting};
use crate::interproc_plan::ProcPlan;
use inkwell::llvm_sys::prelude::*;
use pathprof_core::dag::CfgEdgeRole;
use pathprof_core::interproc::potentials::{potentials, Shift, ValuedEdge};
use pathprof_core::interproc::{ArcKind, Numbering, ProcId};
use pathprof_core::BlockId;
use std::os::raw::c_void;

/// The potential of each block of `plan` (all zero where the numbering's placement is kept).
pub fn block_potentials(
    num: &Numbering<'_>,
    p: ProcId,
    plan: &ProcPlan,
    config: &Config,
    fam: *mut c_void,
) -> Vec<Shift> {
    let g = &plan.graph;
    let n = g.cfg.num_blocks();
    let wanted = match config.ip_placement {
        IpPlacement::Values => false,
        IpPlacement::Tree => true,
        IpPlacement::Dispatch => crate::weights::is_dispatch_function(g),
    };
    if !wanted {
        return vec![Shift::ZERO; n];
    }
    let f: LLVMValueRef = plan.f;
    let (weights, _) = crate::weights::edge_weights(g, f, &plan.name, 0, &Weighting::Llvm, None, fam);
    let dag = num.supergraph().dag(p);
    let mut edges = Vec::new();
    for e in g.cfg.edge_ids() {
        let CfgEdgeRole::Real(d) = dag.cfg_edge_role(e) else { continue };
        let Some(arc) = num.arc_of(p, d) else { continue };
        if !matches!(arc.kind, ArcKind::Branch { .. }) {
            continue;
        }
        let edge = g.cfg.edge(e);
        edges.push(ValuedEdge {
            from: edge.from,
            to: edge.to,
            rho: arc.rho,
            weight: weights[e.index()],
            forced: g.sites[e.index()] == Site::None,
        });
    }
    // The path is handed in at the entry, to callees and back at call sites: the true number there.
    let program = num.supergraph().program();
    let mut fixed = vec![BlockId(0)];
    for s in program.sites_of(p) {
        if let Some(info) = program.site(s) {
            fixed.push(info.block);
            fixed.push(info.ret);
        }
    }
    // Forced edges closing a cycle: keep the numbering's placement (it was planned to fit).
    potentials(n, &edges, &fixed).unwrap_or_else(|_| vec![Shift::ZERO; n])
}
