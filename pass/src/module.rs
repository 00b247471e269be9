//! Instruments one module: plans every function (no IR changes), then emits counters, the metadata blob, the
//! runtime descriptor and the registering constructor.
//!
//! Planning is pure and may fail per function (a warning, the function stays uninstrumented); emission runs
//! only for functions whose plan succeeded, so a failure never leaves half-instrumented IR behind.

use crate::cfg_build::{self, CallFacts, FunctionGraph, Site};
use crate::config::{Config, Weighting};
use crate::emit::{Counters, EmitStats};
use crate::fork_check::{ForkChecks, Guard};
use crate::globals;
use crate::ir;
use crate::path_mode::{self, PathPlan, Sink};
use crate::shim;
use crate::weights::{self, ProfileWeights};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMLinkage;
use pathprof_core::placement::plan_edge_counters_with_entry_counter;
use pathprof_core::EdgeId;
use pathprof_format::meta::{BlockMeta, FunctionMeta, Mode, ModuleMeta, PathStorage};
use pathprof_format::profile::cfg_hash;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Marks a module (and, as a string attribute, each function) as instrumented: a second run of the pass in
/// the same pipeline (for example an LTO link step that loads the plugin again) leaves them alone.
pub const INSTRUMENTED_MARK: &str = "pathprof.instrumented";

/// How a planned function will be instrumented.
enum Plan {
    /// Counters on these chords (edge mode).
    Edge { graph: FunctionGraph, chords: Vec<EdgeId> },
    /// Ball–Larus path profiling.
    Path(Box<PathPlan>),
}

/// A function ready for emission.
struct Planned {
    f: LLVMValueRef,
    plan: Plan,
    meta: FunctionMeta,
}

impl Planned {
    fn graph(&self) -> &FunctionGraph {
        match &self.plan {
            Plan::Edge { graph, .. } => graph,
            Plan::Path(p) => &p.graph,
        }
    }
}

/// Per-module totals for `PATHPROF_STATS`.
#[derive(Default)]
struct Stats {
    functions: usize,
    skipped: usize,
    blocks: usize,
    edges: usize,
    virtual_edges: usize,
    counters: usize,
    optimum: usize,
    emit: EmitStats,
    weights_fallbacks: usize,
    paths: u128,
    hashed: usize,
    sparse: usize,
    chords: usize,
    cuts: usize,
    /// Counter updates moved into promotion slots ([`crate::promote`]).
    promoted: usize,
    fork_checks: usize,
}

/// Instruments `m` per `config`; returns whether the module changed.
pub fn instrument(m: LLVMModuleRef, fam: *mut c_void, config: &Config) -> Result<bool, String> {
    if ir::has_named_metadata(m, INSTRUMENTED_MARK) {
        return Ok(false);
    }
    let identity = crate::identity::of_module(&ir::module_source_name(m), config);
    if config.mode.is_interprocedural() {
        let candidates: Vec<LLVMValueRef> = ir::functions(m).into_iter().filter(|&f| should_instrument(f)).collect();
        return crate::interproc_mode::instrument(m, &candidates, config, &identity);
    }
    let profile = match &config.weighting {
        Weighting::Profile(path) => Some(ProfileWeights::load(path)?),
        _ => None,
    };
    let facts = CallFacts::new(m);
    let module_name = identity.name.clone();
    let mut stats = Stats::default();
    let mut planned = Vec::new();
    let mut next_counter = 0u64;
    let mut storage = StorageChooser::new(config);
    for f in ir::functions(m) {
        if !should_instrument(f) {
            continue;
        }
        let name = ir::name(f);
        let result =
            catch_unwind(AssertUnwindSafe(|| plan(f, &name, config, profile.as_ref(), fam, &facts, &storage)));
        match result {
            Ok(Ok((mut p, used_source))) => {
                p.meta.counter_base = next_counter;
                next_counter += u64::from(p.meta.num_counters);
                if let Some(pm) = p.meta.path.as_ref() {
                    storage.commit(pm.storage, pm.num_paths);
                }
                stats.weights_fallbacks += usize::from(!used_source);
                planned.push(p);
            }
            Ok(Err(why)) => {
                stats.skipped += 1;
                eprintln!("pathprof: warning: {module_name}: leaving `{name}` uninstrumented: {why}");
            }
            Err(_) => {
                stats.skipped += 1;
                eprintln!("pathprof: warning: {module_name}: internal error while planning `{name}`; left uninstrumented");
            }
        }
    }
    if planned.is_empty() {
        return Ok(false);
    }

    let uses_phi = planned.iter().any(|p| match &p.plan {
        Plan::Edge { graph, chords } => chords.iter().any(|&e| graph.sites[e.index()] == Site::TargetPhi),
        Plan::Path(_) => false,
    });
    let scratch = next_counter;
    let array_len = (next_counter + u64::from(uses_phi)).max(1);
    let counters_global = globals::counter_array(m, array_len);
    let counters = Counters::new(m, counters_global, array_len, config.atomic, config.mode == Mode::Path, scratch);
    let hashed_functions: Vec<u64> = planned
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.meta.path.as_ref().map(|x| x.storage), Some(PathStorage::Hashed { .. })))
        .map(|(i, _)| i as u64)
        .collect();
    // One cache size for the module's tables: the largest hashed function's.
    let blocks = hashed_functions.iter().map(|&i| planned[i as usize].graph().blocks.len()).max().unwrap_or(0);
    let tables = globals::PathTables::new(m, &hashed_functions, config.cache_pairs(blocks));
    let regions: Vec<globals::Region> = planned
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p.meta.path.as_ref() {
            Some(pm) if matches!(pm.storage, PathStorage::Sparse { .. }) => {
                Some(globals::Region::new(m, i as u64, pm.num_paths as u64))
            }
            _ => None,
        })
        .collect();
    let region_counters: Vec<Counters> =
        regions.iter().map(|r| Counters::new(m, r.global, r.len, config.atomic, true, 0)).collect();
    let fork_checks = ForkChecks::new(m, globals::descriptor(m));
    for (index, p) in planned.iter().enumerate() {
        let index = index as u64;
        let guards: Vec<Guard> = match &p.plan {
            Plan::Edge { graph, chords } => {
                let s = counters.instrument(graph, chords, p.meta.counter_base);
                stats.emit.split_edges += s.split_edges;
                stats.emit.phi_edges += s.phi_edges;
                stats.counters += chords.len();
                stats.optimum += graph.cfg.num_edges() + 1 - graph.cfg.num_vertices();
                guarded_calls(graph, &fork_checks)
                    .map(|(b, call)| Guard::block(call, index, b))
                    .collect()
            }
            Plan::Path(pp) => {
                let sink = match pp.meta.storage {
                    PathStorage::Dense => Sink::Dense { counters: &counters, base: p.meta.counter_base },
                    PathStorage::Hashed { table } => {
                        stats.hashed += 1;
                        Sink::Hashed { counters: &counters, update: tables.update(m, table as usize, config.atomic) }
                    }
                    PathStorage::Sparse { region } => {
                        stats.sparse += 1;
                        Sink::Dense { counters: &region_counters[region as usize], base: 0 }
                    }
                };
                let keys = path_mode::emit(pp, &sink);
                stats.paths += pp.num_paths;
                stats.chords += pp.incs.chords().filter(|&d| pp.incs.inc(d) != 0).count();
                stats.cuts += pp.dag.cut_edges().len();
                guarded_calls(&pp.graph, &fork_checks)
                    .filter_map(|(b, call)| keys[b as usize].map(|k| Guard::path(call, index, k)))
                    .collect()
            }
        };
        let guards = if config.fork_checks { guards } else { Vec::new() };
        stats.fork_checks += guards.len();
        fork_checks.emit(&guards);
        if config.mode == Mode::Edge && config.promote {
            stats.promoted += crate::promote::promote(p.f, counters_global, config.atomic, &facts);
        }
        ir::mark_instrumented(p.f, INSTRUMENTED_MARK);
        let g = p.graph();
        stats.functions += 1;
        stats.blocks += g.cfg.num_blocks();
        stats.edges += g.cfg.num_edges();
        stats.virtual_edges += g.cfg.edges().iter().filter(|e| e.kind.is_virtual()).count();
    }

    let meta = ModuleMeta {
        module_name: identity.name,
        output: identity.output,
        mode: config.mode,
        weighting: config.weighting.spelling(),
        atomic: config.atomic,
        functions: planned.into_iter().map(|p| p.meta).collect(),
        interproc: None,
        // Path mode's truncated paths count arrivals (path_mode.rs); edge mode has none.
        path_arrivals: config.mode == Mode::Path,
        fork_reentries: config.fork_checks,
    };
    globals::register_module(m, &meta, counters_global, array_len, config.atomic, &tables, &regions);
    ir::add_named_metadata(m, INSTRUMENTED_MARK);
    if config.stats {
        let mode_stats = match config.mode {
            Mode::Edge => format!(
                "counters={} optimum={} split_edges={} phi_edges={} promoted_updates={}",
                stats.counters, stats.optimum, stats.emit.split_edges, stats.emit.phi_edges, stats.promoted
            ),
            Mode::Path | Mode::Context | Mode::Piecewise => format!(
                "paths={} dense_counters={} sparse_functions={} hashed_functions={} increment_chords={} cut_edges={}",
                stats.paths, next_counter, stats.sparse, stats.hashed, stats.chords, stats.cuts
            ),
        };
        eprintln!(
            "pathprof: stats: module={module_name} mode={} functions={} skipped={} blocks={} edges={} \
             virtual_edges={} {mode_stats} fork_checks={} weighting={} weighting_fallbacks={}",
            config.mode.name(),
            stats.functions,
            stats.skipped,
            stats.blocks,
            stats.edges,
            stats.virtual_edges,
            stats.fork_checks,
            config.weighting.spelling(),
            stats.weights_fallbacks,
        );
    }
    Ok(true)
}

/// The calls of `g` that may be in flight at a `fork()` and get a re-entry check, with their blocks: every call
/// that may not return ([`FunctionGraph::abnormal_calls`]) the checks want, in a block that is not left by
/// `unreachable` (a call there cannot come back).
pub(crate) fn guarded_calls<'g>(
    g: &'g FunctionGraph,
    checks: &'g ForkChecks,
) -> impl Iterator<Item = (u32, LLVMValueRef)> + 'g {
    g.abnormal_calls.iter().enumerate().flat_map(move |(b, calls)| {
        let dead_end = ir::terminator(g.blocks[b]).is_some_and(|t| ir::opcode(t) == inkwell::llvm_sys::LLVMOpcode::LLVMUnreachable);
        calls.iter().copied().filter(move |&c| !dead_end && checks.wants(c)).map(move |c| (b as u32, c))
    })
}

/// Decides where each path-mode function's counts go, in module order: the dense counter array up to
/// `PATHPROF_PATH_ARRAY_MAX` paths, a sparse region of its own up to `PATHPROF_PATH_SPARSE_MAX` (while the
/// module's regions stay within `SPARSE_TOTAL_MAX` counters), a run-time hash table beyond.
struct StorageChooser {
    dense_max: u128,
    sparse_max: u128,
    next_table: u32,
    next_region: u32,
    sparse_used: u64,
}

impl StorageChooser {
    fn new(config: &Config) -> StorageChooser {
        StorageChooser {
            dense_max: config.path_array_max,
            sparse_max: config.path_sparse_max.max(config.path_array_max),
            next_table: 0,
            next_region: 0,
            sparse_used: 0,
        }
    }

    fn choose(&self, num_paths: u128) -> PathStorage {
        if num_paths <= self.dense_max {
            PathStorage::Dense
        } else if num_paths <= self.sparse_max && self.sparse_used + num_paths as u64 <= crate::config::SPARSE_TOTAL_MAX {
            PathStorage::Sparse { region: self.next_region }
        } else {
            PathStorage::Hashed { table: self.next_table }
        }
    }

    /// Records that a planned function took `storage`.
    fn commit(&mut self, storage: PathStorage, num_paths: u128) {
        match storage {
            PathStorage::Dense => {}
            PathStorage::Sparse { .. } => {
                self.next_region += 1;
                self.sparse_used += num_paths as u64;
            }
            PathStorage::Hashed { .. } => self.next_table += 1,
        }
    }
}

/// Definitions we own or that will be discarded are left alone.
fn should_instrument(f: LLVMValueRef) -> bool {
    if ir::is_declaration(f) || ir::fn_has_string_attr(f, INSTRUMENTED_MARK) {
        return false;
    }
    let linkage = unsafe { LLVMGetLinkage(f) };
    if linkage == LLVMLinkage::LLVMAvailableExternallyLinkage {
        return false;
    }
    !ir::name(f).starts_with("__pathprof_")
}

/// Plans one function: graph, weights, then edge counters or path numbering; metadata. No IR is changed.
fn plan(
    f: LLVMValueRef,
    name: &str,
    config: &Config,
    profile: Option<&ProfileWeights>,
    fam: *mut c_void,
    facts: &CallFacts,
    storage: &StorageChooser,
) -> Result<(Planned, bool), String> {
    let graph = cfg_build::build(f, facts).map_err(|u| u.0)?;
    let hash = cfg_hash(&graph.cfg);
    let (weights, used_source) = weights::edge_weights(&graph, f, name, hash, &config.weighting, profile, fam);
    let (file, start_line) = ir::subprogram_file_line(f);
    let mut meta = FunctionMeta {
        name: name.to_string(),
        display_name: shim::subprogram_name(f),
        file,
        start_line,
        cfg: graph.cfg.clone(),
        blocks: graph.block_lines.iter().map(|l| BlockMeta { lines: l.clone() }).collect(),
        edge_counters: vec![None; graph.cfg.num_edges()],
        counter_base: 0,
        num_counters: 0,
        reentry_blocks: graph.reentry_blocks.clone(),
        cfg_hash: hash,
        path: None,
    };
    let plan = match config.mode {
        Mode::Edge => {
            let instrumentable: Vec<bool> = graph.sites.iter().map(|&s| s != Site::None).collect();
            let edge_plan = plan_edge_counters_with_entry_counter(&graph.cfg, &weights, &instrumentable)
                .map_err(|e| format!("no exact counter placement: {e}"))?;
            let chords = edge_plan.chords.clone();
            if config.dump {
                dump(name, &graph, &weights, &chords);
            }
            for (i, &e) in chords.iter().enumerate() {
                meta.edge_counters[e.index()] = Some(i as u32);
            }
            meta.num_counters = chords.len() as u32;
            Plan::Edge { graph, chords }
        }
        Mode::Path | Mode::Context | Mode::Piecewise => {
            let pp = path_mode::plan(graph, &weights, config.path_budget, &|n| storage.choose(n))?;
            if config.dump {
                let chords: Vec<EdgeId> = Vec::new();
                dump(name, &pp.graph, &weights, &chords);
                eprintln!("  paths: {} (storage {:?}, {} cut edges)", pp.num_paths, pp.meta.storage, pp.dag.cut_edges().len());
            }
            if pp.meta.storage == PathStorage::Dense {
                meta.num_counters = u32::try_from(pp.num_paths).map_err(|_| "dense path array too large")?;
            }
            meta.path = Some(pp.meta.clone());
            Plan::Path(Box::new(pp))
        }
    };
    Ok((Planned { f, plan, meta }, used_source))
}

/// `PATHPROF_DEBUG=dump`: the graph with weights, sites and chords. Legend: `*` = counter (chord).
fn dump(name: &str, g: &FunctionGraph, weights: &[f64], chords: &[EdgeId]) {
    eprintln!("pathprof: dump `{name}`: {} blocks, EXIT = bb{}; `*` marks a counter", g.cfg.num_blocks(), g.cfg.num_blocks());
    for e in g.cfg.edge_ids() {
        let edge = g.cfg.edge(e);
        let mark = if chords.contains(&e) { "*" } else { " " };
        eprintln!(
            "  {mark} {e}: {} -> {} {:?} weight {} site {:?}",
            edge.from,
            edge.to,
            edge.kind,
            weights[e.index()],
            g.sites[e.index()]
        );
    }
}
