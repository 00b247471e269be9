//! Melski–Reps interprocedural path profiling of one module (modes `context` and `piecewise`): plans the
//! program ([`crate::interproc_plan`]), numbers it with `pathprof_core::interproc`, emits the runtime state
//! ([`crate::interproc_emit`]), the counters and the metadata the decoder rebuilds the numbering from.
//!
//! Path numbers are module-wide (`0..num_paths`, at most `PATHPROF_PATH_BUDGET`): a dense counter array when
//! there are at most `PATHPROF_PATH_ARRAY_MAX` paths, a sparse region up to `PATHPROF_PATH_SPARSE_MAX`, otherwise
//! one run-time hash table for the module.

use crate::cfg_build::CallFacts;
use crate::config::Config;
use crate::emit::Counters;
use crate::globals;
use crate::identity::ModuleIdentity;
use crate::interproc_emit::{FnEmitter, Store, Tls};
use crate::fork_check::{ForkChecks, Guard, Key};
use crate::interproc_plan::{self, ProcPlan};
use crate::ir;
use crate::module::INSTRUMENTED_MARK;
use crate::shim;
use inkwell::llvm_sys::prelude::*;
use pathprof_core::interproc::{Mode as IpMode, Numbering, ProcId, SiteRole};
use pathprof_core::BlockId;
use pathprof_format::meta::{BlockMeta, FunctionMeta, InterprocMeta, InterprocProc, Mode, ModuleMeta, PathStorage};
use pathprof_format::profile::cfg_hash;

/// Instruments `candidates` of `m` as one program; returns whether the module changed.
pub fn instrument(
    m: LLVMModuleRef,
    candidates: &[LLVMValueRef],
    config: &Config,
    identity: &ModuleIdentity,
) -> Result<bool, String> {
    let module_name = identity.name.as_str();
    let facts = CallFacts::new(m);
    let mode = if config.mode == Mode::Piecewise { IpMode::Piecewise } else { IpMode::Context };
    let mut left_out = Vec::new();
    let plan = interproc_plan::plan(candidates, &facts, mode, config.path_budget, &mut left_out)?;
    for (name, why) in &left_out {
        eprintln!("pathprof: warning: {module_name}: leaving `{name}` uninstrumented: {why}");
    }
    let Some(plan) = plan else { return Ok(false) };
    let sg = &plan.supergraph;
    let num = sg.number(mode).map_err(|e| e.to_string())?;
    let num_paths = num.num_paths();
    let storage = if num_paths <= config.path_array_max {
        PathStorage::Dense
    } else if num_paths <= config.path_sparse_max {
        PathStorage::Sparse { region: 0 }
    } else {
        PathStorage::Hashed { table: 0 }
    };
    let dense = storage == PathStorage::Dense;
    let array_len = if dense { (num_paths as u64).max(1) } else { 1 };

    let counters_global = globals::counter_array(m, array_len);
    let counters = Counters::new(m, counters_global, array_len, config.atomic, true, 0);
    let hashed = matches!(storage, PathStorage::Hashed { .. });
    let blocks = plan.procs.iter().map(|p| p.graph.blocks.len()).sum();
    let tables = globals::PathTables::new(m, if hashed { &[0] } else { &[] }, config.cache_pairs(blocks));
    let regions: Vec<globals::Region> = match storage {
        PathStorage::Sparse { .. } => vec![globals::Region::new(m, 0, num_paths as u64)],
        _ => Vec::new(),
    };
    let region_counters: Vec<Counters> =
        regions.iter().map(|r| Counters::new(m, r.global, r.len, config.atomic, true, 0)).collect();
    let store = match storage {
        PathStorage::Dense => Store::Dense(&counters),
        PathStorage::Sparse { .. } => Store::Dense(&region_counters[0]),
        PathStorage::Hashed { .. } => {
            Store::Hashed { counters: &counters, update: tables.update(m, 0, config.atomic) }
        }
    };
    let tls = Tls::new(m);
    let functions: Vec<LLVMValueRef> = plan.procs.iter().map(|p| p.f).collect();
    let fork_checks = ForkChecks::new(m, globals::descriptor(m));
    let mut num_fork_checks = 0;
    for (i, p) in plan.procs.iter().enumerate() {
        let keys = FnEmitter::emit(&tls, &store, &num, &functions, ProcId::from_index(i), p);
        let guards =
            if config.fork_checks { fork_guards(&num, ProcId::from_index(i), p, &keys, &fork_checks) } else { Vec::new() };
        num_fork_checks += guards.len();
        fork_checks.emit(&guards);
        ir::mark_instrumented(p.f, INSTRUMENTED_MARK);
    }

    let program = sg.program();
    let meta = ModuleMeta {
        module_name: identity.name.clone(),
        output: identity.output.clone(),
        mode: config.mode,
        weighting: config.weighting.spelling(),
        atomic: config.atomic,
        functions: plan
            .procs
            .iter()
            .map(|p| {
                let (file, start_line) = ir::subprogram_file_line(p.f);
                FunctionMeta {
                    name: p.name.clone(),
                    display_name: shim::subprogram_name(p.f),
                    file,
                    start_line,
                    cfg: p.graph.cfg.clone(),
                    blocks: p.graph.block_lines.iter().map(|l| BlockMeta { lines: l.clone() }).collect(),
                    edge_counters: vec![None; p.graph.cfg.num_edges()],
                    counter_base: 0,
                    num_counters: 0,
                    reentry_blocks: Vec::new(),
                    cfg_hash: cfg_hash(&p.graph.cfg),
                    path: None,
                }
            })
            .collect(),
        interproc: Some(InterprocMeta {
            procs: program
                .procs()
                .iter()
                .map(|p| InterprocProc { call_sites: p.call_sites.clone(), external_entry: p.external_entry })
                .collect(),
            num_paths,
            storage,
            budget_cuts: plan.budget_cuts,
        }),
        path_arrivals: true,
        fork_reentries: config.fork_checks,
    };
    globals::register_module(m, &meta, counters_global, array_len, config.atomic, &tables, &regions);
    ir::add_named_metadata(m, INSTRUMENTED_MARK);
    if config.stats {
        let roles = sg.calls().roles();
        let count = |r: SiteRole| roles.iter().filter(|&&x| x == r).count();
        eprintln!(
            "pathprof: stats: module={module_name} mode={} functions={} skipped={} roots={} paths={num_paths} \
             storage={} call_sites={} interprocedural={} recursive={} cut_by_budget={} budget={} fork_checks={}",
            config.mode.name(),
            plan.procs.len(),
            left_out.len(),
            sg.calls().roots().len(),
            match storage {
                PathStorage::Dense => "dense",
                PathStorage::Sparse { .. } => "sparse",
                PathStorage::Hashed { .. } => "hashed",
            },
            roles.len(),
            count(SiteRole::Interprocedural),
            count(SiteRole::Recursive),
            plan.budget_cuts,
            config.path_budget,
            num_fork_checks,
        );
    }
    Ok(true)
}

/// The fork re-entry checks of function `p`: a block that counts arrivals records its truncated path (`keys`); an
/// interprocedural call block, whose path goes on in the callee, records the block.
fn fork_guards(num: &Numbering<'_>, p: ProcId, plan: &ProcPlan, keys: &[Option<LLVMValueRef>], checks: &ForkChecks) -> Vec<Guard> {
    let sg = num.supergraph();
    let index = p.index() as u64;
    crate::module::guarded_calls(&plan.graph, checks)
        .filter_map(|(b, call)| match keys.get(b as usize).copied().flatten() {
            Some(k) => Some(Guard::path(call, index, Key::Value(k))),
            None => {
                let site = sg.program().site_at(p, BlockId(b))?;
                (sg.calls().role(site) == SiteRole::Interprocedural).then(|| Guard::block(call, index, b))
            }
        })
        .collect()
}
