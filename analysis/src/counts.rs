//! From a module's chord counters (edge mode) or path counts (path mode, via [`crate::paths`]) to every edge and
//! block count of one function, with an honest "exact" flag.
//!
//! Fork re-entries (`ModuleMeta::fork_reentries`): activations that a `fork()`ed child resumed after a call that
//! was in flight at the fork are measured virtual edges EXIT→B (`pathprof_core::reentry`); a block's count
//! includes them, and every count stays exact — a `Termination` edge then counts real abnormal departures only.

use crate::judge::InexactReason;
use crate::judge::{judge, AnalysisError, FunctionCounts};
use pathprof_core::propagate::derive_counts_with_reentries;
use pathprof_core::vertex_profile::derive_block_counts;
use pathprof_core::BlockId;
use pathprof_format::meta::{FunctionMeta, Mode};
use pathprof_format::profile::ModuleProfile;

/// Derives every edge and block count of function `func_index` and decides whether the counts are exact.
///
/// Edge mode: from its chord counters (BL94 Figure 6, via [`pathprof_core::propagate::derive_counts`]). Block mode: the block counts and
/// invocations from its counters (BL94 Figure 8, via [`derive_block_counts`]); edge counts the counters do not
/// determine are `None` without making the function inexact, a block they do not determine is `None` and a
/// reason. Path mode: from its path counts
/// (BL96 regeneration, via [`crate::function_path_counts`], whose `counts` this returns), so `pathprof show`
/// prints the same block and edge counts for both modes.
///
/// Not exact when: a derived edge is negative (except a `Termination` edge of a block in
/// `FunctionMeta::reentry_blocks`, which `setjmp` re-enters so its net departures can be negative), a derived
/// edge exceeds `u64::MAX`, flow is not conserved somewhere, or the record has `RECORD_FLAG_INCOMPLETE`,
/// `RECORD_FLAG_THREADED_NONATOMIC` or unknown flags. A negative count is never returned as a number.
///
/// Context and piecewise modules: from the module's decoded paths (the whole module is decoded; callers that
/// want several functions use [`ModuleCounts`], which decodes once).
pub fn function_edge_counts(module: &ModuleProfile, func_index: usize) -> Result<FunctionCounts, AnalysisError> {
    ModuleCounts::new(module).function(func_index)
}

/// The counts of a module's functions, one at a time, with the work that is per module done once: a context
/// or piecewise module's paths are decoded at construction (every function's counts come from them), edge- and
/// path-mode functions are analysed when asked for.
pub struct ModuleCounts<'a> {
    module: &'a ModuleProfile,
    interproc: Option<Result<Vec<FunctionCounts>, AnalysisError>>,
}

impl<'a> ModuleCounts<'a> {
    /// Prepares `module` (decoding its interprocedural paths, if it has any).
    pub fn new(module: &'a ModuleProfile) -> ModuleCounts<'a> {
        let interproc = module
            .meta
            .mode
            .is_interprocedural()
            .then(|| crate::interproc::module_path_counts(module).map(|mp| mp.functions));
        ModuleCounts { module, interproc }
    }

    /// The counts of function `func_index` (see [`function_edge_counts`]).
    pub fn function(&self, func_index: usize) -> Result<FunctionCounts, AnalysisError> {
        let module = self.module;
        let out_of_range = |n: usize| AnalysisError::FunctionOutOfRange {
            module: module.meta.module_name.clone(),
            index: func_index,
            num_functions: n,
        };
        match &self.interproc {
            Some(Ok(all)) => all.get(func_index).cloned().ok_or_else(|| out_of_range(all.len())),
            Some(Err(e)) => Err(e.clone()),
            None => per_function_counts(module, func_index),
        }
    }
}

/// [`function_edge_counts`] of an edge- or path-mode function.
fn per_function_counts(module: &ModuleProfile, func_index: usize) -> Result<FunctionCounts, AnalysisError> {
    let name = || module.meta.module_name.clone();
    if module.meta.mode == Mode::Path {
        return crate::paths::function_path_counts(module, func_index).map(|p| p.counts);
    }
    let f = module.meta.functions.get(func_index).ok_or_else(|| AnalysisError::FunctionOutOfRange {
        module: name(),
        index: func_index,
        num_functions: module.meta.functions.len(),
    })?;
    let cfg = &f.cfg;
    let out_of_range = || AnalysisError::CounterOutOfRange { module: name(), function: f.name.clone() };

    let mut measured_counts: Vec<Option<u64>> = Vec::with_capacity(cfg.num_edges());
    for slot in &f.edge_counters {
        measured_counts.push(match slot {
            Some(i) => {
                let at = f.counter_base.checked_add(u64::from(*i)).ok_or_else(out_of_range)?;
                let at = usize::try_from(at).map_err(|_| out_of_range())?;
                Some(*module.counters.get(at).ok_or_else(out_of_range)?)
            }
            None => None,
        });
    }
    if measured_counts.len() != cfg.num_edges() {
        return Err(out_of_range());
    }
    let forked = module.fork_reentries();
    let corrupt = |reason: String| AnalysisError::Reentry { module: name(), function: f.name.clone(), reason };
    let mine = |m: &std::collections::BTreeMap<(u64, u128), u64>| {
        m.range((func_index as u64, 0)..=(func_index as u64, u128::MAX)).map(|(&(_, k), &c)| (k, c)).collect::<Vec<_>>()
    };
    if let Some((t, _)) = mine(&forked.paths).first() {
        return Err(corrupt(format!("an edge-mode function with a fork re-entry of path {t}")));
    }
    let reentries: Vec<(BlockId, u64)> =
        mine(&forked.blocks).into_iter().map(|(b, c)| (BlockId(u32::try_from(b).unwrap_or(u32::MAX)), c)).collect();
    let adj = cfg.adjacency();
    if module.meta.mode == Mode::Block {
        return block_mode_counts(module, f, &measured_counts, &reentries);
    }
    let derived = derive_counts_with_reentries(cfg, &adj, &measured_counts, &reentries)
        .map_err(|error| AnalysisError::Propagate { module: name(), function: f.name.clone(), error })?;
    let mut per_block = vec![0i128; cfg.num_blocks()];
    for (b, c) in reentries {
        if let Some(x) = per_block.get_mut(b.index()) {
            *x = x.saturating_add(i128::from(c));
        }
    }

    let measured = f.edge_counters.iter().map(Option::is_some).collect();
    let violations = &derived.conservation_violations;
    Ok(judge(module, f, derived.edges, &derived.vertices, &per_block, violations, measured, Vec::new()))
}

/// Block mode's counts of one function: block counts (and every edge count the counters happen to determine)
/// from the counted edges, judged like edge mode's; undetermined edges are simply absent.
fn block_mode_counts(
    module: &ModuleProfile,
    f: &FunctionMeta,
    measured_counts: &[Option<u64>],
    reentries: &[(BlockId, u64)],
) -> Result<FunctionCounts, AnalysisError> {
    let cfg = &f.cfg;
    let derived = derive_block_counts(cfg, &cfg.adjacency(), measured_counts, reentries).map_err(|error| {
        AnalysisError::Propagate { module: module.meta.module_name.clone(), function: f.name.clone(), error }
    })?;
    let mut per_block = vec![0i128; cfg.num_blocks()];
    for &(b, c) in reentries {
        if let Some(x) = per_block.get_mut(b.index()) {
            *x = x.saturating_add(i128::from(c));
        }
    }
    let mut leading = Vec::new();
    for (i, v) in derived.vertices.iter().take(cfg.num_blocks()).enumerate() {
        let block = BlockId::from_index(i);
        match v {
            None => leading.push(InexactReason::BlockNotDerivable { block }),
            Some(c) if *c < 0 => leading.push(InexactReason::NegativeBlock { block }),
            Some(_) => {}
        }
    }
    // Undetermined counts enter the judge as 0 (so they raise nothing) and leave it as None.
    let raw_edges = derived.edges.iter().map(|c| c.unwrap_or(0)).collect();
    let raw_vertices: Vec<i128> = derived.vertices.iter().map(|c| c.unwrap_or(0)).collect();
    let measured = measured_counts.iter().map(Option::is_some).collect();
    let violations = &derived.conservation_violations;
    let mut counts = judge(module, f, raw_edges, &raw_vertices, &per_block, violations, measured, leading);
    for (slot, d) in counts.edges.iter_mut().zip(&derived.edges) {
        if d.is_none() {
            *slot = None;
        }
    }
    for (slot, d) in counts.blocks.iter_mut().zip(&derived.vertices) {
        if d.is_none() {
            *slot = None;
        }
    }
    counts.entry = counts.edges.get(cfg.exit_to_entry().index()).copied().flatten();
    Ok(counts)
}
