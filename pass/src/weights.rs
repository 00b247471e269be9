//! Edge weights for the maximum spanning tree, from the configured source. Weights decide where counters go
//! (their cost), never what the counts are.

use crate::cfg_build::FunctionGraph;
use crate::config::Weighting;
use crate::shim;
use inkwell::llvm_sys::prelude::*;
use pathprof_analysis::ModuleCounts;
use pathprof_core::{weighting, EdgeKind};
use pathprof_format::profile::{self, Profile};
use std::collections::HashMap;
use std::os::raw::c_void;

/// Exact edge counts from an earlier profile, by function name and CFG hash.
pub struct ProfileWeights {
    by_function: HashMap<(String, u64), Vec<f64>>,
}

impl ProfileWeights {
    /// Loads `path`; every function whose counts are exact becomes available as weights.
    pub fn load(path: &str) -> Result<ProfileWeights, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read weights profile {path}: {e}"))?;
        let prof: Profile = profile::read(&bytes).map_err(|e| format!("weights profile {path}: {e}"))?;
        let mut by_function = HashMap::new();
        for module in &prof.modules {
            let module_counts = ModuleCounts::new(module);
            for (i, f) in module.meta.functions.iter().enumerate() {
                if let Ok(counts) = module_counts.function(i) {
                    if counts.exact {
                        let w = counts.edges.iter().map(|c| c.unwrap_or(0) as f64).collect();
                        by_function.insert((f.name.clone(), f.cfg_hash), w);
                    }
                }
            }
        }
        Ok(ProfileWeights { by_function })
    }
}

/// Computes one weight per edge of `g.cfg` (EdgeId order). Returns the weights and whether the requested
/// source was used (a profile without this function falls back to LLVM's estimate).
pub fn edge_weights(
    g: &FunctionGraph,
    f: LLVMValueRef,
    name: &str,
    cfg_hash: u64,
    source: &Weighting,
    profile: Option<&ProfileWeights>,
    fam: *mut c_void,
) -> (Vec<f64>, bool) {
    match source {
        Weighting::Uniform => (weighting::uniform(&g.cfg), true),
        Weighting::Bl94 => (weighting::bl94(&g.cfg, &g.cfg.adjacency()), true),
        Weighting::Llvm => {
            let mut w = llvm_weights(g, f, fam);
            price_split_edges_in_dispatch_functions(g, &mut w);
            keep_counters_off_tail_returns(g, f, &mut w);
            (w, true)
        }
        Weighting::Profile(_) => match profile.and_then(|p| p.by_function.get(&(name.to_string(), cfg_hash))) {
            Some(w) if w.len() == g.cfg.num_edges() => (w.clone(), true),
            _ => (llvm_weights(g, f, fam), false),
        },
    }
}

/// A counter between a call of `f` to itself and the `ret` that returns its result keeps LLVM from turning the
/// recursion into a loop: tail-recursion elimination (with its accumulator form, `fib(n-1) + fib(n-2)`) needs
/// nothing but the return after the call, and a counter update is a store it cannot move. LLVM's IR PGO counts
/// on entry and gets the loop; a placement that is optimal by increments (one per call, on the edges into the
/// return block) but loses it costs 40% more instructions on a naive Fibonacci. So edges from a block that
/// calls `f` into a block that ends in `ret` weigh more than all others together: the spanning tree takes them
/// whenever it can, and the counters go before the calls instead.
fn keep_counters_off_tail_returns(g: &FunctionGraph, f: LLVMValueRef, weights: &mut [f64]) {
    let calls_self = |b: usize| {
        crate::ir::instructions(g.blocks[b]).into_iter().any(|i| unsafe {
            !inkwell::llvm_sys::core::LLVMIsACallInst(i).is_null() && crate::ir::called_function(i) == Some(f)
        })
    };
    let returns = |b: usize| {
        crate::ir::terminator(g.blocks[b])
            .is_some_and(|t| crate::ir::opcode(t) == inkwell::llvm_sys::LLVMOpcode::LLVMRet)
    };
    let heavy = weights.iter().sum::<f64>() + 1.0;
    for (i, e) in g.cfg.edges().iter().enumerate() {
        let into_block = matches!(e.kind, EdgeKind::Branch { .. }) && e.to.index() < g.cfg.num_blocks();
        if into_block && returns(e.to.index()) && calls_self(e.from.index()) {
            weights[i] = heavy;
        }
    }
}

/// A block with this many predecessors makes a function a dispatch-style state machine (an interpreter loop, a
/// regex matcher's backtracking switch) for [`price_split_edges_in_dispatch_functions`].
const DISPATCH_JOIN_PREDECESSORS: usize = 32;

/// In a function with a dispatch join, a counter on a critical edge is priced at twice its frequency plus one
/// (the counter and the jump of the block that holds it; BFI estimates some edges at zero, and a split still
/// costs code), so the spanning tree takes critical edges where the cost allows, as LLVM's own instrumentation
/// always does (`CFGMST`: critical edges weigh 1000×).
///
/// Why only there: the blocks that split critical edges stay between a branch and its join, so a value the
/// branch tests dominates the ways into the join's PHIs. LLVM 19's `isGuaranteedNotToBeUndefOrPoison` then
/// succeeds at each level of its recursion through self-referencing PHIs and explores all their entries again at
/// the next (exponential; llvm/llvm-project#130110, fixed in LLVM 21). On pcre2 10.42's `match()` (5,241 blocks,
/// a 323-predecessor join) edge mode's first CorrelatedValuePropagation ran for more than ten minutes; with this
/// pricing it takes 2 s. Pricing only by 1.05, or only edges into joins of 8 or more predecessors, or only edges
/// next to forwarding blocks, left it hanging. In ordinary functions the frequency-optimal placement is kept:
/// the same pricing everywhere costs the loop kernels up to 14% more instructions (heapsort).
fn price_split_edges_in_dispatch_functions(g: &FunctionGraph, weights: &mut [f64]) {
    if !is_dispatch_function(g) {
        return;
    }
    let adj = g.cfg.adjacency();
    let is_branch = |e: &pathprof_core::EdgeId| matches!(g.cfg.edge(*e).kind, EdgeKind::Branch { .. });
    let branch_in = |b: pathprof_core::BlockId| adj.in_edges(b).iter().filter(|e| is_branch(e)).count();
    let branch_out = |b: pathprof_core::BlockId| adj.out_edges(b).iter().filter(|e| is_branch(e)).count();
    for (i, e) in g.cfg.edges().iter().enumerate() {
        if matches!(e.kind, EdgeKind::Branch { .. }) && branch_out(e.from) > 1 && branch_in(e.to) > 1 {
            weights[i] = 2.0 * (weights[i] + 1.0);
        }
    }
}

/// Whether `g` has a join of [`DISPATCH_JOIN_PREDECESSORS`] or more branch predecessors: a dispatch-style state
/// machine, whose counters must stay off critical edges (see [`price_split_edges_in_dispatch_functions`]).
pub fn is_dispatch_function(g: &FunctionGraph) -> bool {
    let adj = g.cfg.adjacency();
    (0..g.cfg.num_blocks()).any(|b| {
        let ins = adj.in_edges(pathprof_core::BlockId(b as u32));
        ins.iter().filter(|e| matches!(g.cfg.edge(**e).kind, EdgeKind::Branch { .. })).count()
            >= DISPATCH_JOIN_PREDECESSORS
    })
}

/// BFI × BPI edge frequencies; edges into EXIT weigh their block's frequency. Falls back to uniform weights if
/// the analyses disagree with the graph (they are computed on the same, unmodified function, so they should
/// not).
fn llvm_weights(g: &FunctionGraph, f: LLVMValueRef, fam: *mut c_void) -> Vec<f64> {
    if fam.is_null() {
        return weighting::uniform(&g.cfg);
    }
    let edge_freq = shim::fill_u64s(|p, n| unsafe { shim::pathprof_shim_edge_freqs(fam, f, p, n) });
    let block_freq = shim::fill_u64s(|p, n| unsafe { shim::pathprof_shim_block_freqs(fam, f, p, n) });
    if block_freq.len() != g.cfg.num_blocks() {
        return weighting::uniform(&g.cfg);
    }
    // Successor frequencies are laid out block by block; find each block's first slot.
    let mut first_slot = vec![0usize; g.cfg.num_blocks() + 1];
    let mut slots = 0usize;
    for (b, start) in first_slot.iter_mut().enumerate().take(g.cfg.num_blocks()) {
        *start = slots;
        slots += crate::ir::terminator(g.blocks[b]).map_or(0, |t| crate::ir::successors(t).len());
    }
    if slots != edge_freq.len() {
        return weighting::uniform(&g.cfg);
    }
    g.cfg
        .edges()
        .iter()
        .map(|e| match e.kind {
            EdgeKind::Branch { succ } => edge_freq[first_slot[e.from.index()] + succ as usize] as f64,
            EdgeKind::Return => block_freq[e.from.index()] as f64,
            EdgeKind::Termination | EdgeKind::ExitToEntry => 0.0,
        })
        .collect()
}
