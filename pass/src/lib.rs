//! libpathprof.so: the pathprof LLVM 19 pass plugin.
//!
//! The plugin turns each function's IR into a `pathprof_core::Cfg`, asks `pathprof-core` where counters go,
//! emits them, and embeds the metadata (`pathprof-format`) that lets `pathprof` interpret the profile without
//! the binary. No profiling algorithm lives in this crate. With `PATHPROF_SLICE=FILE:LINE[:VAR]` it builds an
//! executable slice instead ([`slice_mode`]; the slicing algorithm is `pathprof_core::slicing`'s).
//!
//! # Entry points
//! - `llvmGetPassPluginInfo` (exported here: a cdylib does not export the C++ shim's symbols) hands LLVM the
//!   shim's `registerPassBuilderCallbacks`, which adds the pass at the pipeline start (clang `-fpass-plugin`)
//!   and as `-passes=pathprof` (opt).
//! - The shim's pass calls [`entry::pathprof_instrument_module`] with the module and its analysis manager.
//!
//! # Panics
//! No panic crosses into C++: the entry point and each function's planning run under `catch_unwind`; a bug
//! becomes a warning and an uninstrumented function, never a crashed compiler.

// LLVM C API references (`LLVMValueRef`, `LLVMModuleRef`, ...) are opaque handles owned by LLVM and valid for
// the whole pass invocation; the pass passes them around like references. Marking every function that takes
// one `unsafe` would add no checking, only noise: the unsafety is confined to the FFI calls in `ir`, `emit`,
// `globals`, `path_mode` and `use_mode`.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod asm_clobbers;
pub mod branch_split;
pub mod cfg_build;
pub mod config;
pub mod emit;
pub mod entry;
pub mod fork_check;
pub mod globals;
pub mod identity;
pub mod interproc_emit;
pub mod interproc_mode;
pub mod interproc_place;
pub mod interproc_plan;
pub mod intraproc_mode;
pub mod ir;
pub mod isel_blocks;
pub mod module;
pub mod module_emitter;
pub mod names;
pub mod path_mode;
pub mod promote;
pub mod shim;
pub mod slice_graph;
pub mod slice_mode;
pub mod slice_observe;
pub mod slice_profile;
pub mod slice_rewrite;
pub mod statement_graphs;
pub mod storage;
pub mod trace_helpers;
pub mod trace_mode;
pub mod use_mode;
pub mod weights;

use std::os::raw::{c_char, c_void};

/// Rust mirror of `llvm::PassPluginLibraryInfo` (LLVM 19, plugin API version 1).
#[repr(C)]
pub struct PassPluginLibraryInfo {
    /// `LLVM_PLUGIN_API_VERSION`.
    pub api_version: u32,
    /// Plugin name.
    pub plugin_name: *const c_char,
    /// Plugin version.
    pub plugin_version: *const c_char,
    /// Called with the `PassBuilder&` to register the pass.
    pub register_pass_builder_callbacks: unsafe extern "C" fn(*mut c_void),
}

/// LLVM 19's plugin API version.
const LLVM_PLUGIN_API_VERSION: u32 = 1;

/// The plugin entry point LLVM looks up after `dlopen`.
#[no_mangle]
pub extern "C" fn llvmGetPassPluginInfo() -> PassPluginLibraryInfo {
    PassPluginLibraryInfo {
        api_version: LLVM_PLUGIN_API_VERSION,
        plugin_name: c"pathprof".as_ptr(),
        plugin_version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char,
        register_pass_builder_callbacks: shim::pathprof_shim_register_callbacks,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plugin_info_mirror_matches_llvm_layout() {
        let cxx = unsafe { crate::shim::pathprof_shim_plugin_info_size() };
        assert_eq!(std::mem::size_of::<crate::PassPluginLibraryInfo>(), cxx);
    }
}
