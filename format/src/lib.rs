//! pathprof-format: the one reader and writer of pathprof's on-disk and in-binary data.
//!
//! # Layers
//! - [`layout`] (`no_std`, no allocation): file and record headers, the descriptor the pass emits for the
//!   runtime, the checksum. The runtime writes and merges files with nothing else.
//! - [`records`] (`no_std`, no allocation): the one walk over a file's header and records, shared by the
//!   runtime's merge and the reader, so both accept exactly the same files.
//! - [`symbols`] (`no_std`): the names of the runtime's entry points and of what the pass adds to a module.
//! - [`trace_layout`] (`no_std`): trace mode's per-thread state and file records.
//! - [`meta`] (std): the per-module metadata blob the pass embeds and the tools decode.
//! - [`profile`] (std): reading a whole profile from untrusted bytes (never panics), writing, merging.
//! - [`trace`] (std): trace files: module metadata with call sites, and the per-thread bit streams.
//! - [`bb_addr_map`] (std): clang's `.llvm_bb_addr_map` section (machine block addresses of a binary).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

pub mod layout;
pub mod records;
pub mod symbols;
pub mod trace_layout;

#[cfg(feature = "std")]
pub mod bb_addr_map;
#[cfg(feature = "std")]
pub mod meta;
#[cfg(feature = "std")]
pub mod profile;
#[cfg(feature = "std")]
pub mod trace;
