//! Melski–Reps interprocedural path profiling of one module (modes `context` and `piecewise`): plans the
//! program ([`crate::interproc_plan`]), numbers it with `pathprof_core::interproc`, emits the runtime state
//! ([`crate::interproc_emit`]), the counters and the metadata the decoder rebuilds the numbering from.
//!
//! Path numbers are module-wide (`0..num_paths`, at most `PATHPROF_PATH_BUDGET`), laid out by storage unit
//! (`pathprof_core::interproc::units`: runs of functions no interprocedural call crosses). Each unit counts its
//! paths, numbered from 0 within it, in a dense counter array when it has at most `PATHPROF_PATH_ARRAY_MAX`
//! paths, a sparse region up to `PATHPROF_PATH_SPARSE_MAX`, otherwise a run-time hash table of its own.

use crate::cfg_build::CallFacts;
use crate::config::Config;
use crate::fork_check::{ForkChecks, Guard, Key};
use crate::identity::ModuleIdentity;
use crate::interproc_emit::{FnEmitter, Tls};
use crate::interproc_plan::{self, ProcPlan};
use crate::module_emitter::{function_meta, LeftOut, ModuleEmitter};
use crate::storage::{CounterLayout, CounterStorage, Sink, Unit};
use inkwell::llvm_sys::prelude::*;
use pathprof_core::interproc::{finest_units, Mode as IpMode, Numbering, ProcId, SiteRole};
use pathprof_core::BlockId;
use pathprof_format::meta::{InterprocMeta, InterprocProc, InterprocUnit, Mode, PathStorage};

/// Instruments `candidates` of `m` as one program; returns whether the module changed.
pub fn instrument(
    m: LLVMModuleRef,
    candidates: &[LLVMValueRef],
    fam: *mut std::os::raw::c_void,
    config: &Config,
    identity: ModuleIdentity,
) -> Result<bool, String> {
    let module_name = identity.name.clone();
    let facts = CallFacts::new(m).without_coroutines(crate::cfg_build::COROUTINE_PATHS);
    facts.mark_safe_functions();
    let mode = if config.mode == Mode::Piecewise { IpMode::Piecewise } else { IpMode::Context };
    let mut not_admitted = Vec::new();
    let plan = interproc_plan::plan(candidates, &facts, mode, config, &mut not_admitted)?;
    let mut left_out = LeftOut::default();
    for (f, why) in &not_admitted {
        left_out.record(&module_name, *f, why);
    }
    let Some(plan) = plan else {
        if left_out.is_empty() {
            return Ok(false);
        }
        left_out.register_alone(m, config, identity);
        return Ok(true);
    };
    let sg = &plan.supergraph;
    let num = sg.number_in_units(mode, &finest_units(sg)).map_err(|e| e.to_string())?;
    let num_paths = num.num_paths();
    // Each storage unit counts its paths, numbered from 0 within it, in storage of its own.
    let mut layout = CounterLayout::new(config);
    let mut unit_meta = Vec::with_capacity(num.units().len());
    let mut dense_bases = Vec::with_capacity(num.units().len());
    for unit in num.units() {
        let storage = layout.choose(unit.num_paths);
        let blocks = plan.procs[unit.procs.clone()].iter().map(|p| p.graph.blocks.len()).sum();
        dense_bases.push(layout.add(Unit { storage, slots: unit.num_paths as u64, blocks }));
        unit_meta.push(InterprocUnit { first_proc: unit.procs.start as u32, storage });
    }

    let counters = CounterStorage::emit(m, config, &layout, false);
    let sinks: Vec<Sink<'_>> =
        unit_meta.iter().zip(&dense_bases).map(|(u, &base)| counters.sink(m, u.storage, base)).collect();
    let tls = Tls::new(m);
    let mut module = ModuleEmitter::new(m, config, identity, &counters);
    let functions: Vec<LLVMValueRef> = plan.procs.iter().map(|p| p.f).collect();
    let mut promoted = 0;
    let mut local_counts = 0;
    let mut tree_placed = 0;
    let mut root_copies = 0;
    for (i, p) in plan.procs.iter().enumerate() {
        let phi = crate::interproc_place::block_potentials(&num, ProcId::from_index(i), p, config, fam);
        tree_placed += usize::from(phi.iter().any(|&x| x != pathprof_core::interproc::potentials::Shift::ZERO));
        let sink = &sinks[num.unit_of(ProcId::from_index(i))];
        let emitted = FnEmitter::emit(&tls, sink, &num, &functions, ProcId::from_index(i), p, config.promote, phi);
        sink.counters().finish_indirect(m); // before promotion and root copies see the function
        let guards = fork_guards(&num, ProcId::from_index(i), p, &emitted.arrival_keys, module.fork_checks());
        module.function_done(p.f, guards);
        local_counts += emitted.local_counts.len();
        if config.promote {
            promoted += crate::promote::promote(p.f, sink.counters(), &facts);
            promoted += crate::promote::flush_local_counts(p.f, &facts, &emitted.local_counts, &|before, key, n| {
                sink.add_before(before, key, n)
            });
        }
        if emitted.wants_root_copy {
            root_copies += usize::from(crate::interproc_emit::call_root_copy_for_recursion(p.f, &tls).is_some());
        }
    }

    let program = sg.program();
    let interproc = InterprocMeta {
        procs: program
            .procs()
            .iter()
            .map(|p| InterprocProc {
                call_sites: p.call_sites.clone(),
                external_entry: p.external_entry,
                cut_vertices: p.cut_vertices.iter().map(|b| b.0).collect(),
                reset_headers: p.reset_headers.iter().map(|b| b.0).collect(),
            })
            .collect(),
        num_paths,
        budget_cuts: plan.budget_cuts,
        units: unit_meta,
    };
    let functions = plan.procs.iter().map(|p| function_meta(p.f, &p.name, &p.graph)).collect();
    let skipped = left_out.len();
    let storages: Vec<PathStorage> = interproc.units.iter().map(|u| u.storage).collect();
    let count_units = |kind: fn(PathStorage) -> bool| storages.iter().filter(|&&s| kind(s)).count();
    let line = module.finish(functions, Some(interproc), true, left_out);
    if config.stats {
        let roles = sg.calls().roles();
        let count = |r: SiteRole| roles.iter().filter(|&&x| x == r).count();
        line.field("skipped", skipped)
            .field("roots", sg.calls().roots().len())
            .field("paths", num_paths)
            .field("units", storages.len())
            .field("dense_units", count_units(|s| s == PathStorage::Dense))
            .field("sparse_units", count_units(|s| matches!(s, PathStorage::Sparse { .. })))
            .field("hashed_units", count_units(|s| matches!(s, PathStorage::Hashed { .. })))
            .field("call_sites", roles.len())
            .field("interprocedural", count(SiteRole::Interprocedural))
            .field("recursive", count(SiteRole::Recursive))
            .field("cut_by_budget", plan.budget_cuts)
            .field("cut_leaves", plan.leaf_cuts)
            .field("cut_functions", plan.procs.iter().filter(|p| !p.cut_vertices.is_empty()).count())
            .field("promoted_updates", promoted)
            .field("local_counts", local_counts)
            .field("tree_placed", tree_placed)
            .field("root_copies", root_copies)
            .field("budget", config.path_budget)
            .fork_checks()
            .print();
    }
    Ok(true)
}

/// The fork re-entry checks of function `p`: a block that counts arrivals records its truncated path (`keys`); an
/// interprocedural call block, whose path goes on in the callee, records the block.
fn fork_guards(
    num: &Numbering<'_>,
    p: ProcId,
    plan: &ProcPlan,
    keys: &[Option<LLVMValueRef>],
    checks: &ForkChecks,
) -> Vec<Guard> {
    let sg = num.supergraph();
    let index = p.index() as u64;
    checks
        .guarded_calls(&plan.graph)
        .filter_map(|(b, call)| match keys.get(b as usize).copied().flatten() {
            Some(k) => Some(Guard::path(call, index, Key::Value(k))),
            None => {
                let site = sg.program().site_at(p, BlockId(b))?;
                (sg.calls().role(site) == SiteRole::Interprocedural).then(|| Guard::block(call, index, b))
            }
        })
        .collect()
}
