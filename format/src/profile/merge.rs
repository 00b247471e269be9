//! Adding up profiles (several runs, several processes, several programs of one build).
//!
//! Edge-mode counters are unsigned counts: a sum above `u64::MAX` is an error, never a wrap. Path-mode counters
//! are read as signed (`i64` in two's complement: profiles written before arrival counting,
//! [`ModuleMeta::path_arrivals`](crate::meta::ModuleMeta::path_arrivals) false, hold a termination path's count
//! net of a −1 taken after its call returned, which can be negative; today's counters only grow), so they add
//! with wrapping arithmetic, which is exactly signed addition of the `i64` values — as the runtime does when it
//! adds a run into an existing file.

use super::{ModuleProfile, Profile, SparseEntry};
use std::collections::{HashMap, HashSet};

/// Why profiles cannot be merged. Input numbers in messages are 1-based, in the order given to [`merge`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// No profiles were given.
    #[error("nothing to merge: no input profiles")]
    NoInputs,
    /// The same module (name and output) has two different metadata hashes: two builds of it.
    #[error("different builds of module {module}: the profiles come from different binaries")]
    DifferentBuilds {
        /// The module ([`crate::meta::ModuleMeta::label`]).
        module: String,
    },
    /// One input has two records for the same module build.
    #[error("module {module} appears twice in input {input}")]
    DuplicateModule {
        /// The module ([`crate::meta::ModuleMeta::label`]).
        module: String,
        /// Input (1-based).
        input: usize,
    },
    /// Records of the same build disagree on the number of counters (only possible for hand-built profiles).
    #[error("module {module} has {first} counters in input 1 but {other} in input {input}")]
    CounterCountMismatch {
        /// The module ([`crate::meta::ModuleMeta::label`]).
        module: String,
        /// Counters in the first input.
        first: usize,
        /// Counters in the other input.
        other: usize,
        /// The other input (1-based).
        input: usize,
    },
    /// A sum of edge-mode counts (or of run counts) does not fit in 64 bits; the merged profile would be wrong,
    /// so none is produced. Path-mode counts wrap instead (they are signed).
    #[error("count overflow while merging module {module}: {what} exceeds 2^64-1")]
    Overflow {
        /// The module ([`crate::meta::ModuleMeta::label`]).
        module: String,
        /// Which count (`counter 12`, `run count`, `path 7 of function #2`).
        what: String,
    },
}

/// Sums profiles: per module (matched by `meta_hash`), counters and sparse path counts are added — with checked
/// arithmetic in edge-mode modules, with wrapping (signed `i64`) arithmetic in path-mode modules — flags are
/// ORed and runs added (checked). A module only some inputs have is kept with their sum, as the runtime keeps
/// every program's records in one shared profile file: the `%p` files of a test suite's programs, which share a
/// library's modules and each have their own `main`, add up to what one shared file would hold. The result keeps
/// the modules in order of first appearance; sparse entries keep first-appearance order.
///
/// Refuses a module name (and output) with two metadata hashes ([`MergeError::DifferentBuilds`]): two builds
/// of one module, whose counts cannot be added.
pub fn merge(profiles: &[Profile]) -> Result<Profile, MergeError> {
    let first = profiles.first().ok_or(MergeError::NoInputs)?;
    let mut out = first.clone();

    // Which build each module (name and output) belongs to, over all inputs: the most specific refusal comes
    // first.
    let mut builds: HashMap<(&str, &str), u64> = HashMap::new();
    let mut per_input: Vec<HashMap<u64, &ModuleProfile>> = Vec::with_capacity(profiles.len());
    for (i, p) in profiles.iter().enumerate() {
        let input = i.saturating_add(1);
        let mut map = HashMap::with_capacity(p.modules.len());
        for m in &p.modules {
            if map.insert(m.meta_hash, m).is_some() {
                return Err(MergeError::DuplicateModule { module: m.meta.label(), input });
            }
            let identity = (m.meta.module_name.as_str(), m.meta.output.as_str());
            match builds.get(&identity) {
                Some(&h) if h != m.meta_hash => {
                    return Err(MergeError::DifferentBuilds { module: m.meta.label() });
                }
                Some(_) => {}
                None => {
                    builds.insert(identity, m.meta_hash);
                }
            }
        }
        per_input.push(map);
    }
    // Every module once, in order of first appearance; each is the sum from the first input that has it on.
    let mut seen: HashSet<u64> = first.modules.iter().map(|m| m.meta_hash).collect();
    let mut first_input = vec![0usize; first.modules.len()];
    for (i, p) in profiles.iter().enumerate().skip(1) {
        for m in &p.modules {
            if seen.insert(m.meta_hash) {
                out.modules.push(m.clone());
                first_input.push(i);
            }
        }
    }
    for (acc, &from) in out.modules.iter_mut().zip(&first_input) {
        let label = acc.meta.label();
        let module = || label.clone();
        let wrapping = !acc.meta.mode.counts_edges();
        // Index the first input's entries (folding any repeated keys), then add the others' into them.
        let mut sparse_index: HashMap<(u64, u128), usize> = HashMap::with_capacity(acc.sparse.len());
        let own = std::mem::take(&mut acc.sparse);
        add_sparse(&mut acc.sparse, &mut sparse_index, &own, &label, wrapping)?;
        for (i, map) in per_input.iter().enumerate().skip(from.saturating_add(1)) {
            let input = i.saturating_add(1);
            let Some(m) = map.get(&acc.meta_hash) else { continue };
            if m.counters.len() != acc.counters.len() {
                return Err(MergeError::CounterCountMismatch {
                    module: module(),
                    first: acc.counters.len(),
                    other: m.counters.len(),
                    input,
                });
            }
            for (k, (a, b)) in acc.counters.iter_mut().zip(&m.counters).enumerate() {
                *a = if wrapping {
                    a.wrapping_add(*b)
                } else {
                    a.checked_add(*b)
                        .ok_or_else(|| MergeError::Overflow { module: module(), what: format!("counter {k}") })?
                };
            }
            add_sparse(&mut acc.sparse, &mut sparse_index, &m.sparse, &label, wrapping)?;
            acc.flags |= m.flags;
            acc.runs = acc
                .runs
                .checked_add(m.runs)
                .ok_or_else(|| MergeError::Overflow { module: module(), what: "run count".into() })?;
        }
    }
    Ok(out)
}

/// Adds `more` into `acc`, keyed by (function, path); `index` maps each key to its position in `acc`. Counts
/// wrap (path mode) or are checked (edge mode).
fn add_sparse(
    acc: &mut Vec<SparseEntry>,
    index: &mut HashMap<(u64, u128), usize>,
    more: &[SparseEntry],
    module: &str,
    wrapping: bool,
) -> Result<(), MergeError> {
    for s in more {
        add_entry(acc, index, *s, wrapping).ok_or_else(|| MergeError::Overflow {
            module: module.to_string(),
            what: format!("path {} of function #{}", s.path, s.function),
        })?;
    }
    Ok(())
}

fn add_entry(
    acc: &mut Vec<SparseEntry>,
    index: &mut HashMap<(u64, u128), usize>,
    s: SparseEntry,
    wrapping: bool,
) -> Option<()> {
    match index.get(&(s.function, s.path)) {
        Some(&i) => {
            let e = acc.get_mut(i)?;
            e.count = if wrapping { e.count.wrapping_add(s.count) } else { e.count.checked_add(s.count)? };
        }
        None => {
            index.insert((s.function, s.path), acc.len());
            acc.push(s);
        }
    }
    Some(())
}
