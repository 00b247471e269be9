//! The module-level half of instrumentation, shared by every mode: a mode plans its functions and fills in
//! their code; [`ModuleEmitter`] takes the counter storage, the fork re-entry checks and marks of each function,
//! and makes the module's metadata, registration and statistics out of them.
//!
//! A mode's sequence: plan (no IR changes; [`LeftOut::record`] for what it leaves out) → lay out counts
//! ([`crate::storage::CounterLayout`]) → [`CounterStorage::emit`] → its own module globals, if any →
//! [`ModuleEmitter::new`] → per function: its code, then [`ModuleEmitter::function_done`] →
//! [`ModuleEmitter::finish`] → [`StatsLine`]. The order is the order of the globals in the emitted module.

use crate::cfg_build::FunctionGraph;
use crate::config::Config;
use crate::fork_check::{ForkChecks, Guard};
use crate::globals;
use crate::identity::ModuleIdentity;
use crate::ir;
use crate::names::INSTRUMENTED_MARK;
use crate::shim;
use crate::storage::{CounterStorage, Sink};
use inkwell::llvm_sys::prelude::*;
use pathprof_format::meta::{BlockMeta, FunctionMeta, InterprocMeta, LeftOutFunction, ModuleMeta, PathStorage};
use pathprof_format::profile::cfg_hash;
use std::fmt::Display;

/// One module being instrumented, after its functions were planned and its counter storage emitted.
pub struct ModuleEmitter<'a> {
    m: LLVMModuleRef,
    config: &'a Config,
    identity: ModuleIdentity,
    storage: &'a CounterStorage,
    fork_checks: ForkChecks,
    functions: usize,
    num_fork_checks: usize,
}

impl<'a> ModuleEmitter<'a> {
    /// Starts emission: declares the runtime descriptor and the fork-check state (after the mode's own globals).
    pub fn new(m: LLVMModuleRef, config: &'a Config, identity: ModuleIdentity, storage: &'a CounterStorage) -> Self {
        let fork_checks = ForkChecks::new(m, globals::descriptor(m));
        ModuleEmitter { m, config, identity, storage, fork_checks, functions: 0, num_fork_checks: 0 }
    }

    /// Where a unit with `storage` and first dense counter `base` counts ([`CounterStorage::sink`]).
    pub fn sink(&self, storage: PathStorage, base: u64) -> Sink<'a> {
        self.storage.sink(self.m, storage, base)
    }

    /// Which calls want a fork re-entry check, for the mode to build its guards.
    pub fn fork_checks(&self) -> &ForkChecks {
        &self.fork_checks
    }

    /// Completes function `f` once its counting code is in: emits its fork re-entry checks (when enabled; they
    /// split blocks, so they come last) and marks it instrumented.
    pub fn function_done(&mut self, f: LLVMValueRef, guards: Vec<Guard>) {
        let guards = if self.config.fork_checks { guards } else { Vec::new() };
        self.num_fork_checks += guards.len();
        self.fork_checks.emit(&guards);
        ir::mark_instrumented(f, INSTRUMENTED_MARK);
        self.functions += 1;
    }

    /// Emits the module's metadata (`functions` in unit order, `interproc` for the interprocedural modes;
    /// `path_arrivals` when truncated paths count arrivals; the functions `left_out`), registers it with the
    /// runtime and marks the module instrumented. Returns the start of its `PATHPROF_STATS` line.
    pub fn finish(
        self,
        functions: Vec<FunctionMeta>,
        interproc: Option<InterprocMeta>,
        path_arrivals: bool,
        left_out: LeftOut,
    ) -> StatsLine {
        let config = self.config;
        let stats = StatsLine {
            line: format!(
                "pathprof: stats: module={} mode={} functions={}",
                self.identity.name,
                config.mode.name(),
                self.functions
            ),
            fork_checks: self.num_fork_checks,
        };
        let meta = ModuleMeta {
            module_name: self.identity.name,
            output: self.identity.output,
            mode: config.mode,
            weighting: config.weighting.spelling(),
            atomic: config.atomic,
            functions,
            interproc,
            path_arrivals,
            fork_reentries: config.fork_checks,
            left_out: left_out.into_functions(),
            path_loop_resets: config.path_loop_resets(),
            compilation_dirs: crate::identity::compilation_dirs(self.m),
        };
        self.storage.register(self.m, &meta);
        ir::add_named_metadata(self.m, INSTRUMENTED_MARK);
        stats
    }
}

/// The metadata of function `f` (linkage name `name`) with graph `g`, before a mode adds its counters.
pub fn function_meta(f: LLVMValueRef, name: &str, g: &FunctionGraph) -> FunctionMeta {
    let (file, start_line) = ir::subprogram_file_line(f);
    FunctionMeta {
        name: name.to_string(),
        display_name: shim::subprogram_name(f),
        file,
        start_line,
        cfg: g.cfg.clone(),
        blocks: g.block_lines.iter().map(|l| BlockMeta { lines: l.clone() }).collect(),
        edge_counters: vec![None; g.cfg.num_edges()],
        counter_base: 0,
        num_counters: 0,
        reentry_blocks: g.reentry_blocks.clone(),
        cfg_hash: cfg_hash(&g.cfg),
        path: None,
    }
}

/// The functions a mode could not instrument. Each gets a compile-time warning and goes into the module's
/// metadata, so that the tools list it as not profiled: without it a function that ran uncounted would read as
/// one that never ran.
#[derive(Default)]
pub struct LeftOut(Vec<LeftOutFunction>);

impl LeftOut {
    /// Leaves function `f` of `module` out (it keeps its code) because of `why`.
    pub fn record(&mut self, module: &str, f: LLVMValueRef, why: &str) {
        let name = ir::name(f);
        if why != crate::cfg_build::NO_PROFILE && why != crate::cfg_build::NO_DEFINED_EXECUTION {
            eprintln!("pathprof: warning: {module}: leaving `{name}` uninstrumented: {why}");
        }
        let (file, start_line) = ir::subprogram_file_line(f);
        self.0.push(LeftOutFunction {
            name,
            display_name: shim::subprogram_name(f),
            file,
            start_line,
            reason: why.to_string(),
        });
    }

    /// Leaves `f` out after its planning panicked (a bug of the pass, reported as such).
    pub fn record_internal_error(&mut self, module: &str, f: LLVMValueRef) {
        self.record(module, f, "internal error while planning it");
    }

    /// How many functions were left out.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether every function could be instrumented.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The list for the module's metadata.
    pub fn into_functions(self) -> Vec<LeftOutFunction> {
        self.0
    }

    /// Registers a module none of whose functions could be instrumented, so that the profile still lists them.
    pub fn register_alone(self, m: LLVMModuleRef, config: &Config, identity: ModuleIdentity) {
        let layout = crate::storage::CounterLayout::new(config);
        let storage = CounterStorage::emit(m, config, &layout, false);
        // The metadata is that of any module of the mode: path modes count arrivals (of no path here).
        let path_arrivals = !config.mode.counts_edges();
        ModuleEmitter::new(m, config, identity, &storage).finish(Vec::new(), None, path_arrivals, self);
    }
}

/// One `PATHPROF_STATS` line: `pathprof: stats: module=… mode=… functions=…` (the functions instrumented),
/// then the mode's own `key=value` fields in the order it adds them, so every mode's line reads alike.
pub struct StatsLine {
    line: String,
    /// The checks [`ModuleEmitter::function_done`] emitted.
    fork_checks: usize,
}

impl StatsLine {
    /// Appends ` key=value`.
    pub fn field(mut self, key: &str, value: impl Display) -> StatsLine {
        self.line.push_str(&format!(" {key}={value}"));
        self
    }

    /// Appends `fork_checks=N`, the checks [`ModuleEmitter::function_done`] emitted.
    pub fn fork_checks(self) -> StatsLine {
        let n = self.fork_checks;
        self.field("fork_checks", n)
    }

    /// Prints the line to stderr.
    pub fn print(&self) {
        eprintln!("{}", self.line);
    }
}
