//! Edge, block and path profiling of one module, function by function (modes `edge`, `block` and `path`): plans
//! every function (no IR changes), then emits counters on chords (block mode: the chords block counts need,
//! [`pathprof_core::vertex_profile`]) or Ball–Larus path numbering into the module's counter storage
//! ([`crate::module_emitter`]).
//!
//! Planning may fail per function (a warning, the function stays uninstrumented); emission runs only for
//! functions whose plan succeeded.

use crate::cfg_build::{self, CallFacts, FunctionGraph, Site};
use crate::config::{Config, Weighting};
use crate::emit::EmitStats;
use crate::fork_check::Guard;
use crate::identity::ModuleIdentity;
use crate::ir;
use crate::module_emitter::{function_meta, LeftOut, ModuleEmitter};
use crate::path_mode::{self, PathPlan};
use crate::storage::{CounterLayout, CounterStorage, Unit};
use crate::weights::{self, ProfileWeights};
use inkwell::llvm_sys::prelude::*;
use pathprof_core::placement::{plan_edge_counters_with_entry_counter, PlacementError};
use pathprof_core::vertex_profile::plan_block_counters;
use pathprof_core::EdgeId;
use pathprof_format::meta::{FunctionMeta, Mode, PathStorage};
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// How a planned function will be instrumented.
enum Plan {
    /// Counters on these chords (edge mode; block mode: the chords block counts need), and how many counters
    /// edge mode would have used.
    Edge { graph: FunctionGraph, chords: Vec<EdgeId>, edge_mode_counters: usize },
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

    /// What the function counts, for the module's counter layout.
    fn unit(&self) -> Unit {
        let blocks = self.graph().blocks.len();
        match &self.meta.path {
            Some(pm) => Unit { storage: pm.storage, slots: pm.num_paths as u64, blocks },
            None => Unit { storage: PathStorage::Dense, slots: u64::from(self.meta.num_counters), blocks },
        }
    }
}

/// Per-module totals for `PATHPROF_STATS`.
#[derive(Default)]
struct Stats {
    skipped: usize,
    blocks: usize,
    edges: usize,
    virtual_edges: usize,
    counters: usize,
    optimum: usize,
    /// Block mode: the counters edge mode would have placed.
    edge_mode_counters: usize,
    emit: EmitStats,
    weights_fallbacks: usize,
    paths: u128,
    chords: usize,
    cuts: usize,
    /// Counter updates moved into promotion slots ([`crate::promote`]).
    promoted: usize,
    /// Path numbers back edges test for ([`crate::path_mode::PathPlan::promoted`]).
    tested_paths: usize,
    /// Counts of hashed functions kept in local slots ([`crate::promote::LocalCount`]).
    local_counts: usize,
}

/// Instruments `candidates` of `m` one by one; returns whether the module changed.
pub fn instrument(
    m: LLVMModuleRef,
    candidates: &[LLVMValueRef],
    fam: *mut c_void,
    config: &Config,
    identity: ModuleIdentity,
) -> Result<bool, String> {
    let profile = match &config.weighting {
        Weighting::Profile(path) => Some(ProfileWeights::load(path)?),
        _ => None,
    };
    let facts = match config.mode {
        Mode::Path => CallFacts::new(m).without_coroutines(crate::cfg_build::COROUTINE_PATHS),
        _ => CallFacts::new(m),
    };
    facts.mark_safe_functions();
    let module_name = identity.name.clone();
    let mut stats = Stats::default();
    let mut planned = Vec::new();
    let mut layout = CounterLayout::new(config);
    let mut left_out = LeftOut::default();
    for &f in candidates {
        let name = ir::name(f);
        let result = catch_unwind(AssertUnwindSafe(|| plan(f, &name, config, profile.as_ref(), fam, &facts, &layout)));
        match result {
            Ok(Ok((mut p, used_source))) => {
                p.meta.counter_base = layout.add(p.unit());
                stats.weights_fallbacks += usize::from(!used_source);
                planned.push(p);
            }
            Ok(Err(why)) => left_out.record(&module_name, f, &why),
            Err(_) => left_out.record_internal_error(&module_name, f),
        }
    }
    stats.skipped = left_out.len();
    if layout.is_empty() {
        if left_out.is_empty() {
            return Ok(false);
        }
        left_out.register_alone(m, config, identity);
        return Ok(true);
    }

    let uses_phi = planned.iter().any(|p| match &p.plan {
        Plan::Edge { graph, chords, .. } => chords.iter().any(|&e| graph.sites[e.index()] == Site::TargetPhi),
        Plan::Path(_) => false,
    });
    let storage = CounterStorage::emit(m, config, &layout, uses_phi);
    let mut module = ModuleEmitter::new(m, config, identity, &storage);
    for (index, p) in planned.iter().enumerate() {
        let index = index as u64;
        // The function's guards, and (path mode) its local counts with the sink that takes their flushes.
        let (guards, local_counts, sink) = match &p.plan {
            Plan::Edge { graph, chords, edge_mode_counters } => {
                let s = storage.counters().instrument(graph, chords, p.meta.counter_base);
                stats.emit.split_edges += s.split_edges;
                stats.emit.phi_edges += s.phi_edges;
                stats.counters += chords.len();
                stats.edge_mode_counters += edge_mode_counters;
                stats.optimum += graph.cfg.num_edges() + 1 - graph.cfg.num_vertices();
                let guards =
                    module.fork_checks().guarded_calls(graph).map(|(b, call)| Guard::block(call, index, b)).collect();
                (guards, Vec::new(), None)
            }
            Plan::Path(pp) => {
                let sink = module.sink(pp.meta.storage, p.meta.counter_base);
                let emitted = path_mode::emit(pp, &sink);
                sink.counters().finish_indirect(m);
                let keys = emitted.arrival_keys;
                stats.paths += pp.num_paths;
                stats.chords += pp.incs.chords().filter(|&d| pp.incs.inc(d) != 0).count();
                stats.cuts += pp.dag.cut_edges().len();
                stats.tested_paths += pp.promoted.iter().map(Vec::len).sum::<usize>();
                let guards = module
                    .fork_checks()
                    .guarded_calls(&pp.graph)
                    .filter_map(|(b, call)| keys[b as usize].map(|k| Guard::path(call, index, k)))
                    .collect();
                (guards, emitted.local_counts, Some(sink))
            }
        };
        module.function_done(p.f, guards);
        if matches!(config.mode, Mode::Edge | Mode::Block | Mode::Path) && config.promote {
            stats.promoted += crate::promote::promote(p.f, storage.counters(), &facts);
        }
        stats.local_counts += local_counts.len();
        if let Some(sink) = &sink {
            stats.promoted += crate::promote::flush_local_counts(p.f, &facts, &local_counts, &|before, key, n| {
                sink.add_before(before, key, n)
            });
        }
        let g = p.graph();
        stats.blocks += g.cfg.num_blocks();
        stats.edges += g.cfg.num_edges();
        stats.virtual_edges += g.cfg.edges().iter().filter(|e| e.kind.is_virtual()).count();
    }

    // Path mode's truncated paths count arrivals (path_mode.rs); edge mode has none.
    let line = module.finish(planned.into_iter().map(|p| p.meta).collect(), None, config.mode == Mode::Path, left_out);
    if config.stats {
        let line = line
            .field("skipped", stats.skipped)
            .field("blocks", stats.blocks)
            .field("edges", stats.edges)
            .field("virtual_edges", stats.virtual_edges);
        let line = match config.mode {
            Mode::Edge => line
                .field("counters", stats.counters)
                .field("optimum", stats.optimum)
                .field("split_edges", stats.emit.split_edges)
                .field("phi_edges", stats.emit.phi_edges)
                .field("promoted_updates", stats.promoted),
            Mode::Block => line
                .field("counters", stats.counters)
                .field("edge_mode_counters", stats.edge_mode_counters)
                .field("split_edges", stats.emit.split_edges)
                .field("phi_edges", stats.emit.phi_edges)
                .field("promoted_updates", stats.promoted),
            Mode::Trace => line,
            Mode::Path | Mode::Context | Mode::Piecewise => {
                let (sparse, hashed) = layout.sparse_and_hashed();
                line.field("paths", stats.paths)
                    .field("dense_counters", layout.dense_counters())
                    .field("sparse_functions", sparse)
                    .field("hashed_functions", hashed)
                    .field("increment_chords", stats.chords)
                    .field("cut_edges", stats.cuts)
                    .field("tested_paths", stats.tested_paths)
                    .field("promoted_updates", stats.promoted)
                    .field("local_counts", stats.local_counts)
            }
        };
        line.fork_checks()
            .field("weighting", config.weighting.spelling())
            .field("weighting_fallbacks", stats.weights_fallbacks)
            .print();
    }
    Ok(true)
}

/// Plans one function: graph, weights, then edge counters or path numbering; metadata. No IR is changed.
fn plan(
    f: LLVMValueRef,
    name: &str,
    config: &Config,
    profile: Option<&ProfileWeights>,
    fam: *mut c_void,
    facts: &CallFacts,
    layout: &CounterLayout,
) -> Result<(Planned, bool), String> {
    let graph = cfg_build::build(f, facts).map_err(|u| u.0)?;
    let mut meta = function_meta(f, name, &graph);
    let (weights, used_source) = weights::edge_weights(&graph, f, name, meta.cfg_hash, &config.weighting, profile, fam);
    let plan = match config.mode {
        Mode::Trace => return Err("trace mode is instrumented by trace_mode".into()),
        Mode::Edge | Mode::Block => {
            let instrumentable: Vec<bool> = graph.sites.iter().map(|&s| s != Site::None).collect();
            let no_plan = |e: PlacementError| format!("no exact counter placement: {e}");
            let (chords, edge_mode_counters) = if config.mode == Mode::Block {
                let plan = plan_block_counters(&graph.cfg, &weights, &instrumentable).map_err(no_plan)?;
                (plan.counted.clone(), plan.edge_mode_counters())
            } else {
                let plan =
                    plan_edge_counters_with_entry_counter(&graph.cfg, &weights, &instrumentable).map_err(no_plan)?;
                let n = plan.chords.len();
                (plan.chords, n)
            };
            if config.dump {
                dump(name, &graph, &weights, &chords);
            }
            for (i, &e) in chords.iter().enumerate() {
                meta.edge_counters[e.index()] = Some(i as u32);
            }
            meta.num_counters = chords.len() as u32;
            Plan::Edge { graph, chords, edge_mode_counters }
        }
        Mode::Path | Mode::Context | Mode::Piecewise => {
            let promote = config.mode == Mode::Path && config.promote && crate::promote::eligible(f, &graph);
            let resets = config.path_loop_resets();
            let pp = path_mode::plan(graph, &weights, config.path_budget, &|n| layout.choose(n), promote, resets)?;
            if config.dump {
                let chords: Vec<EdgeId> = Vec::new();
                dump(name, &pp.graph, &weights, &chords);
                eprintln!(
                    "  paths: {} (storage {:?}, {} cut edges)",
                    pp.num_paths,
                    pp.meta.storage,
                    pp.dag.cut_edges().len()
                );
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
    eprintln!(
        "pathprof: dump `{name}`: {} blocks, EXIT = bb{}; `*` marks a counter",
        g.cfg.num_blocks(),
        g.cfg.num_blocks()
    );
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
