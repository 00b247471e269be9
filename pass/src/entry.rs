//! The `extern "C"` function the C++ shim calls for every module.

use crate::config::Config;
use crate::module;
use crate::shim;
use crate::use_mode;
use inkwell::llvm_sys::prelude::{LLVMModuleRef, LLVMValueRef};
use std::ffi::CString;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// Where the pipeline runs the pass (the shim's `Point` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// The pipeline start of a compile (every mode but icache).
    PipelineStart,
    /// The full-LTO link pipeline (whole-program mode).
    LinkTime,
    /// `OptimizerLast`: after the IR optimiser of a compile (mode icache).
    OptimizerLast,
    /// `opt -passes=pathprof`: wherever the command puts it (a compile's point for every mode).
    Explicit,
}

impl Point {
    fn from_c(p: c_int) -> Point {
        match p {
            1 => Point::LinkTime,
            2 => Point::OptimizerLast,
            3 => Point::Explicit,
            _ => Point::PipelineStart,
        }
    }

    /// Whether a module is worked on here: exactly one point per configuration, so nothing is instrumented
    /// twice — the link in whole-program mode, `OptimizerLast` in mode icache, else the pipeline start.
    pub fn acts(self, config: &Config) -> bool {
        match self {
            Point::LinkTime => config.lto,
            Point::OptimizerLast => config.optimizer_last,
            Point::PipelineStart => !config.lto && !config.optimizer_last,
            Point::Explicit => !config.lto,
        }
    }
}

/// Whether the pass works on modules at `point` in this compile's configuration (1) or leaves them alone (0):
/// the shim asks before doing any work of its own, so the points that do not act add nothing to the compile.
/// A configuration error answers 1 at every point but `OptimizerLast`, so that [`pathprof_instrument_module`]
/// reports it once per compile.
#[no_mangle]
pub extern "C" fn pathprof_acts_at(point: c_int) -> c_int {
    let point = Point::from_c(point);
    catch_unwind(|| Config::from_env().map_or(point != Point::OptimizerLast, |config| point.acts(&config)))
        .map_or(0, c_int::from)
}

/// Promotion after inlining of one function ([`crate::promote::promote_after_inlining`]); 1 if it changed.
/// The configuration is read once per process: the shim calls this for every function, several times.
#[no_mangle]
pub extern "C" fn pathprof_promote_after_inlining(f: LLVMValueRef) -> c_int {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    let enabled = *ENABLED.get_or_init(|| {
        Config::from_env().is_ok_and(|c| c.promote_after_inlining && c.use_profile.is_none() && c.slice.is_none())
    });
    if !enabled {
        return 0;
    }
    catch_unwind(AssertUnwindSafe(|| crate::promote::promote_after_inlining(f) > 0)).map_or(0, c_int::from)
}

/// Instruments one module; returns 1 if it changed. Configuration errors are reported through clang's
/// diagnostics (one line, failed compile); internal errors become a warning and leave the module alone.
#[no_mangle]
pub extern "C" fn pathprof_instrument_module(m: LLVMModuleRef, fam: *mut c_void, point: c_int) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let config = Config::from_env()?;
        if !Point::from_c(point).acts(&config) {
            return Ok(false);
        }
        if config.slice.is_some() {
            return crate::slice_mode::slice_module(m, &config);
        }
        if config.statement_graphs.is_some() {
            return crate::statement_graphs::write(m, &config);
        }
        match &config.use_profile {
            Some(path) => {
                let me = crate::identity::of_module(&crate::ir::module_source_name(m), &config);
                let stats = use_mode::annotate(m, path, &me, config.lto)?;
                let name = &me.name;
                if stats.mismatched > 0 {
                    eprintln!(
                        "pathprof: warning: {name}: {} functions not annotated: their CFG differs from the profile's \
                         (stale profile)",
                        stats.mismatched
                    );
                }
                if stats.inexact > 0 {
                    eprintln!(
                        "pathprof: warning: {name}: {} functions not annotated: their counts in the profile are not \
                         exact (`pathprof show` gives the reason)",
                        stats.inexact
                    );
                }
                if config.stats {
                    eprintln!(
                        "pathprof: use: module={name} annotated={} mismatched={} missing={} inexact={}",
                        stats.annotated, stats.mismatched, stats.missing, stats.inexact
                    );
                }
                Ok(stats.annotated > 0)
            }
            None => module::instrument(m, fam, &config),
        }
    }));
    match result {
        Ok(Ok(changed)) => c_int::from(changed),
        Ok(Err(msg)) => {
            let c = CString::new(format!("pathprof: {msg}").replace('\0', " ")).expect("NULs removed");
            unsafe { shim::pathprof_shim_emit_error(m, c.as_ptr()) };
            0
        }
        Err(_) => {
            eprintln!("pathprof: warning: internal error; module left uninstrumented");
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_compile_point_acts_per_mode() {
        let get = |pairs: &'static [(&'static str, &'static str)]| {
            Config::from_lookup(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())).unwrap()
        };
        for (config, expect) in [
            (get(&[]), [true, false, false]),
            (get(&[("PATHPROF_MODE", "trace")]), [true, false, false]),
            (get(&[("PATHPROF_MODE", "icache")]), [false, false, true]),
            (get(&[("PATHPROF_LTO", "1")]), [false, true, false]),
        ] {
            let acts = [Point::PipelineStart, Point::LinkTime, Point::OptimizerLast].map(|p| p.acts(&config));
            assert_eq!(acts, expect, "{config:?}");
        }
    }
}
