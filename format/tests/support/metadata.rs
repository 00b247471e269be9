//! Metadata builders shared by the test fixtures of `format`, `analysis` and `cli` (included with `#[path]`, as
//! `edge_module.rs` is): one place that knows every field of [`ModuleMeta`] and [`FunctionMeta`], so a field
//! added to the format is filled in once for all fixtures.
#![allow(dead_code)]

use pathprof_core::Cfg;
use pathprof_format::meta::{BlockMeta, FunctionMeta, Mode, ModuleMeta, PathMeta, PathStorage};
use pathprof_format::profile::{self, ModuleProfile, SparseEntry};
use std::collections::BTreeMap;

/// A module of `functions` in `mode` (weighting `uniform`, not atomic, no interprocedural program, no
/// arrival counts, fork re-entries or loop resets, no output).
pub fn module_meta(name: &str, mode: Mode, functions: Vec<FunctionMeta>) -> ModuleMeta {
    ModuleMeta {
        interproc: None,
        path_arrivals: false,
        fork_reentries: false,
        left_out: Vec::new(),
        path_loop_resets: pathprof_core::ball_larus::ResetRule::None,
        compilation_dirs: Vec::new(),
        module_name: name.into(),
        output: String::new(),
        mode,
        weighting: "uniform".into(),
        atomic: false,
        functions,
    }
}

/// A function on `cfg` in `file` (start line 9) whose block `b` has the lines `lines(b)`, without counters, path
/// metadata, display name or re-entry blocks: callers set what their mode needs.
pub fn function_meta(name: &str, file: &str, cfg: Cfg, lines: impl Fn(usize) -> Vec<u32>) -> FunctionMeta {
    FunctionMeta {
        name: name.to_string(),
        display_name: String::new(),
        file: file.into(),
        start_line: 9,
        cfg_hash: profile::cfg_hash(&cfg),
        path: None,
        edge_counters: vec![None; cfg.num_edges()],
        blocks: (0..cfg.num_blocks()).map(|b| BlockMeta { lines: lines(b) }).collect(),
        cfg,
        counter_base: 0,
        num_counters: 0,
        reentry_blocks: vec![],
    }
}

/// A path-mode function ([`function_meta`]) numbered under `budget` with its paths stored in `storage`;
/// `counter_base` and `num_counters` are set by [`path_module`].
pub fn path_function(
    name: &str,
    file: &str,
    cfg: Cfg,
    budget: u128,
    storage: PathStorage,
    lines: impl Fn(usize) -> Vec<u32>,
) -> FunctionMeta {
    let adj = cfg.adjacency();
    let dfs = pathprof_core::dfs::depth_first(&cfg, &adj);
    let dag = pathprof_core::dag::PathDag::build_with_budget(&cfg, &adj, &dfs, budget).unwrap();
    let num_paths = pathprof_core::numbering::Numbering::compute(&dag).unwrap().num_paths();
    let mut f = function_meta(name, file, cfg, lines);
    f.path = Some(PathMeta { budget, num_paths, storage, instrumented_edges: vec![] });
    f
}

/// A path-mode module of `(function, path counts)`: dense functions get `num_paths` counters each (in order),
/// the others sparse entries.
pub fn path_module(name: &str, functions: Vec<(FunctionMeta, BTreeMap<u128, i64>)>) -> ModuleProfile {
    let mut counters = Vec::new();
    let mut sparse = Vec::new();
    let mut metas = Vec::new();
    for (i, (mut f, counts)) in functions.into_iter().enumerate() {
        let pm = f.path.as_ref().unwrap();
        f.counter_base = counters.len() as u64;
        match pm.storage {
            PathStorage::Dense => {
                f.num_counters = pm.num_paths as u32;
                let mut mine = vec![0u64; pm.num_paths as usize];
                for (&r, &c) in &counts {
                    mine[r as usize] = c as u64;
                }
                counters.extend(mine);
            }
            PathStorage::Hashed { .. } | PathStorage::Sparse { .. } => {
                sparse.extend(counts.iter().map(|(&path, &c)| SparseEntry {
                    function: i as u64,
                    path,
                    count: c as u64,
                }));
            }
        }
        metas.push(f);
    }
    ModuleProfile::new(module_meta(name, Mode::Path, metas), counters, sparse, 0, 1)
}
