//! The `extern "C"` function the C++ shim calls for every module.

use crate::config::Config;
use crate::module;
use crate::shim;
use crate::use_mode;
use inkwell::llvm_sys::prelude::LLVMModuleRef;
use std::ffi::CString;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Instruments one module; returns 1 if it changed. Configuration errors are reported through clang's
/// diagnostics (one line, failed compile); internal errors become a warning and leave the module alone.
#[no_mangle]
pub extern "C" fn pathprof_instrument_module(m: LLVMModuleRef, fam: *mut c_void, at_link_time: c_int) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let config = Config::from_env()?;
        // Exactly one of the two pipeline points works on a module: the link in whole-program mode, else the
        // compile.
        if config.lto != (at_link_time != 0) {
            return Ok(false);
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
                if config.stats {
                    eprintln!(
                        "pathprof: use: module={name} annotated={} mismatched={} missing={}",
                        stats.annotated, stats.mismatched, stats.missing
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
