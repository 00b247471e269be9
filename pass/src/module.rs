//! Instruments one module: plans every function (no IR changes), then emits counters, the metadata blob, the
//! runtime descriptor and the registering constructor.
//!
//! Planning is pure and may fail per function (a warning, the function stays uninstrumented); emission runs
//! only for functions whose plan succeeded, so a failure never leaves half-instrumented IR behind.

use crate::cfg_build::{self, CallFacts, FunctionGraph, Site};
use crate::config::{Config, Weighting};
use crate::emit::{Counters, EmitStats};
use crate::globals;
use crate::ir;
use crate::shim;
use crate::weights::{self, ProfileWeights};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMLinkage;
use pathprof_core::placement::plan_edge_counters_with_entry_counter;
use pathprof_core::EdgeId;
use pathprof_format::meta::{BlockMeta, FunctionMeta, Mode, ModuleMeta};
use pathprof_format::profile::cfg_hash;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Marks a module (and, as a string attribute, each function) as instrumented: a second run of the pass in
/// the same pipeline (for example an LTO link step that loads the plugin again) leaves them alone.
pub const INSTRUMENTED_MARK: &str = "pathprof.instrumented";

/// A function ready for emission.
struct Planned {
    f: LLVMValueRef,
    graph: FunctionGraph,
    chords: Vec<EdgeId>,
    meta: FunctionMeta,
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
}

/// Instruments `m` per `config`; returns whether the module changed.
pub fn instrument(m: LLVMModuleRef, fam: *mut c_void, config: &Config) -> Result<bool, String> {
    if ir::has_named_metadata(m, INSTRUMENTED_MARK) {
        return Ok(false);
    }
    if config.mode != Mode::Edge {
        return Err(format!("PATHPROF_MODE={} is not implemented yet", config.mode.name()));
    }
    let profile = match &config.weighting {
        Weighting::Profile(path) => Some(ProfileWeights::load(path)?),
        _ => None,
    };
    let facts = CallFacts::new();
    let module_name = ir::module_source_name(m);
    let mut stats = Stats::default();
    let mut planned = Vec::new();
    let mut next_counter = 0u64;
    for f in ir::functions(m) {
        if !should_instrument(f) {
            continue;
        }
        let name = ir::name(f);
        let result = catch_unwind(AssertUnwindSafe(|| plan(f, &name, config, profile.as_ref(), fam, &facts)));
        match result {
            Ok(Ok((mut p, used_source))) => {
                p.meta.counter_base = next_counter;
                next_counter += p.chords.len() as u64;
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

    let uses_phi = planned.iter().any(|p| p.chords.iter().any(|&e| p.graph.sites[e.index()] == Site::TargetPhi));
    let scratch = next_counter;
    let array_len = next_counter + u64::from(uses_phi);
    let counters_global = globals::counter_array(m, array_len.max(1));
    let counters = Counters::new(m, counters_global, array_len.max(1), config.atomic, scratch);
    for p in &planned {
        let s = counters.instrument(&p.graph, &p.chords, p.meta.counter_base);
        stats.emit.split_edges += s.split_edges;
        stats.emit.phi_edges += s.phi_edges;
        ir::add_string_attr(p.f, INSTRUMENTED_MARK);
        stats.functions += 1;
        stats.blocks += p.graph.cfg.num_blocks();
        stats.edges += p.graph.cfg.num_edges();
        stats.virtual_edges += p.graph.cfg.edges().iter().filter(|e| e.kind.is_virtual()).count();
        stats.counters += p.chords.len();
        stats.optimum += p.graph.cfg.num_edges() + 1 - p.graph.cfg.num_vertices();
    }

    let meta = ModuleMeta {
        module_name: module_name.clone(),
        mode: config.mode,
        weighting: config.weighting.spelling(),
        atomic: config.atomic,
        functions: planned.into_iter().map(|p| p.meta).collect(),
    };
    globals::register_module(m, &meta, counters_global, array_len.max(1), config.atomic);
    ir::add_named_metadata(m, INSTRUMENTED_MARK);
    if config.stats {
        eprintln!(
            "pathprof: stats: module={module_name} functions={} skipped={} blocks={} edges={} virtual_edges={} \
             counters={} optimum={} split_edges={} phi_edges={} weighting={} weighting_fallbacks={}",
            stats.functions,
            stats.skipped,
            stats.blocks,
            stats.edges,
            stats.virtual_edges,
            stats.counters,
            stats.optimum,
            stats.emit.split_edges,
            stats.emit.phi_edges,
            config.weighting.spelling(),
            stats.weights_fallbacks,
        );
    }
    Ok(true)
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

/// Plans one function: graph, weights, spanning tree, chords, metadata. No IR is changed here.
fn plan(
    f: LLVMValueRef,
    name: &str,
    config: &Config,
    profile: Option<&ProfileWeights>,
    fam: *mut c_void,
    facts: &CallFacts,
) -> Result<(Planned, bool), String> {
    let graph = cfg_build::build(f, facts).map_err(|u| u.0)?;
    let hash = cfg_hash(&graph.cfg);
    let (weights, used_source) = weights::edge_weights(&graph, f, name, hash, &config.weighting, profile, fam);
    let instrumentable: Vec<bool> = graph.sites.iter().map(|&s| s != Site::None).collect();
    let edge_plan = plan_edge_counters_with_entry_counter(&graph.cfg, &weights, &instrumentable)
        .map_err(|e| format!("no exact counter placement: {e}"))?;
    let chords = edge_plan.chords.clone();
    if config.dump {
        dump(name, &graph, &weights, &chords);
    }
    let mut edge_counters = vec![None; graph.cfg.num_edges()];
    for (i, &e) in chords.iter().enumerate() {
        edge_counters[e.index()] = Some(i as u32);
    }
    let (file, start_line) = ir::subprogram_file_line(f);
    let meta = FunctionMeta {
        name: name.to_string(),
        display_name: shim::subprogram_name(f),
        file,
        start_line,
        cfg: graph.cfg.clone(),
        blocks: graph.block_lines.iter().map(|l| BlockMeta { lines: l.clone() }).collect(),
        edge_counters,
        counter_base: 0,
        num_counters: chords.len() as u32,
        reentry_blocks: graph.reentry_blocks.clone(),
        cfg_hash: hash,
        path: None,
    };
    Ok((Planned { f, graph, chords, meta }, used_source))
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
