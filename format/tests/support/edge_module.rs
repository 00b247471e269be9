//! The edge-mode module of the format and analysis tests (`mod edge_module` in `format/tests/profile.rs` and
//! `analysis/tests/edge_counts.rs`): two functions over `pathprof_core::fixtures` graphs with hand-chosen
//! counter placements (a spanning tree containing the virtual edges; the chords carry counters).
#![allow(dead_code)]

use pathprof_core::fixtures::{early_exit_cfg, early_exit_chords, loop_diamond_cfg, loop_diamond_chords};
use pathprof_core::Cfg;
use pathprof_format::meta::{FunctionMeta, Mode, ModuleMeta};
use pathprof_format::profile::ModuleProfile;

#[path = "metadata.rs"]
pub mod metadata;

/// Loop around a diamond: 0 → 1; 1 → 2 | 3; 2, 3 → 4; 4 → 1 (back edge) | 5; 5 returns.
/// Edges: e0 0→1, e1 1→2, e2 1→3, e3 2→4, e4 3→4, e5 4→1, e6 4→5, e7 5→EXIT, e8 EXIT→0.
/// Spanning tree {e8, e0, e1, e3, e4, e7}; chords e2, e5, e6 carry counters 0, 1, 2.
/// With 2 invocations and 10 loop iterations (7 via bb2, 3 via bb3): e2 = 3, e5 = 8, e6 = 2.
pub fn loop_diamond(counter_base: u64) -> FunctionMeta {
    function("loop_diamond", loop_diamond_cfg(), loop_diamond_chords(), counter_base, 3)
}

/// 0 → 1 → 2 → return, and bb1 may leave abnormally (a call to `exit`).
/// Edges: e0 0→1, e1 1→2, e2 2→EXIT (Return), e3 1→EXIT (Termination), e4 EXIT→0.
/// Spanning tree {e4, e3, e1}; chords e0, e2 carry counters 0, 1. 5 calls, 1 abnormal exit: e0 = 5, e2 = 4.
pub fn early_exit(counter_base: u64) -> FunctionMeta {
    function("early_exit", early_exit_cfg(), early_exit_chords(), counter_base, 2)
}

pub fn function(name: &str, cfg: Cfg, edge_counters: Vec<Option<u32>>, counter_base: u64, n: u32) -> FunctionMeta {
    let f = metadata::function_meta(name, "t.c", cfg, |b| vec![10 + b as u32, 20 + b as u32]);
    FunctionMeta { display_name: format!("{name}()"), edge_counters, counter_base, num_counters: n, ..f }
}

pub fn module_meta(name: &str) -> ModuleMeta {
    metadata::module_meta(name, Mode::Edge, vec![loop_diamond(0), early_exit(3)])
}

pub fn module(name: &str, counters: Vec<u64>) -> ModuleProfile {
    ModuleProfile::new(module_meta(name), counters, vec![], 0, 1)
}
