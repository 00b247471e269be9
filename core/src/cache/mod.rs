//! Static instruction-cache simulation with on-the-fly counting: Mueller & Whalley, "Efficient On-the-fly
//! Analysis of Program Behavior and Static Cache Simulation", SAS 1995 (notes Part B).
//!
//! - [`uppa`]: unique-path partitioning (Algorithm 1) — few counters, event order kept.
//! - [`verify`]: a checker of Definition 1.
//! - [`stats`]: measurement points against one per block (Table 1).
//! - [`program`]: the program model (blocks with instruction addresses and calls) and the cache geometry.
//! - [`instances`]: the function-instance graph (calling contexts; recursion, indirect and foreign calls).
//! - [`lines`], [`domain`], [`supergraph`]: line references, must/may LRU states, UPs × instances.
//! - [`classify`]: static cache simulation — always-hit, always-miss, first-miss (grouped), conflict.
//! - [`machine_map`]: IR blocks of a trace onto the binary's machine blocks, verified or refused.
//! - [`onthefly`]: the run time's counting, simulating only the sets conflicts reference.
//! - [`machine_model`]: the model of a function's machine code (blocks cut at calls).
//! - [`replay`]: the counting driven by a block-by-block replay of a run (`pathprof icache`).

pub mod classify;
pub mod domain;
pub mod instances;
pub mod lines;
pub mod lru;
pub mod machine_map;
pub mod machine_model;
pub mod onthefly;
pub mod program;
pub mod replay;
pub mod stats;
pub mod supergraph;
pub mod uppa;
pub mod verify;

#[cfg(test)]
mod tests_machine;
#[cfg(test)]
mod tests_paper;
#[cfg(test)]
mod tests_prop;
#[cfg(test)]
mod tests_sim;
