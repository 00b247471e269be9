//! Where a module's counts go, for every mode: the choice among a dense counter array, sparse regions and
//! run-time hash tables while planning ([`CounterLayout`]), the globals that hold them ([`CounterStorage`]),
//! and the handle a function's emitter counts through ([`Sink`]).
//!
//! A mode describes its counted units (a function in edge and path modes, the whole program in the
//! interprocedural modes) and never builds storage globals itself, so a new mode adds units, not globals.

use crate::config::{Config, SPARSE_TOTAL_MAX};
use crate::emit::{CounterUpdates, Counters};
use crate::globals::{self, PathTables, Region, TableUpdate};
use inkwell::llvm_sys::core::{LLVMBuildAdd, LLVMPositionBuilderBefore};
use inkwell::llvm_sys::prelude::*;
use pathprof_format::meta::{ModuleMeta, PathStorage};

/// One counted unit of a module, as planned: its storage, how many slots it numbers and how many blocks it
/// spans (which size its hash table's cache). Its position in the layout is its index in the module metadata,
/// which the runtime's tables and regions name.
#[derive(Clone, Copy, Debug)]
pub struct Unit {
    /// Where its counts go.
    pub storage: PathStorage,
    /// Its counters (dense) or paths (sparse, hashed).
    pub slots: u64,
    /// Its basic blocks.
    pub blocks: usize,
}

/// The module's storage decisions, made unit by unit in module order while planning (no IR changes): the
/// dense counter array up to `PATHPROF_PATH_ARRAY_MAX` paths, a sparse region of its own up to
/// `PATHPROF_PATH_SPARSE_MAX` (while the module's regions stay within [`SPARSE_TOTAL_MAX`] counters), a
/// run-time hash table beyond.
pub struct CounterLayout {
    dense_max: u128,
    sparse_max: u128,
    units: Vec<Unit>,
    dense_used: u64,
    sparse_used: u64,
    regions: u32,
    tables: u32,
}

impl CounterLayout {
    /// An empty layout with `config`'s thresholds.
    pub fn new(config: &Config) -> CounterLayout {
        CounterLayout {
            dense_max: config.path_array_max,
            sparse_max: config.path_sparse_max.max(config.path_array_max),
            units: Vec::new(),
            dense_used: 0,
            sparse_used: 0,
            regions: 0,
            tables: 0,
        }
    }

    /// The storage the next unit gets if it numbers `num_paths` paths.
    pub fn choose(&self, num_paths: u128) -> PathStorage {
        if num_paths <= self.dense_max {
            PathStorage::Dense
        } else if num_paths <= self.sparse_max && self.sparse_used + num_paths as u64 <= SPARSE_TOTAL_MAX {
            PathStorage::Sparse { region: self.regions }
        } else {
            PathStorage::Hashed { table: self.tables }
        }
    }

    /// Adds the next unit (its storage from [`CounterLayout::choose`]); returns its first dense counter.
    pub fn add(&mut self, unit: Unit) -> u64 {
        let base = self.dense_used;
        match unit.storage {
            PathStorage::Dense => self.dense_used += unit.slots,
            PathStorage::Sparse { .. } => {
                self.regions += 1;
                self.sparse_used += unit.slots;
            }
            PathStorage::Hashed { .. } => self.tables += 1,
        }
        self.units.push(unit);
        base
    }

    /// Whether no unit was added.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// The dense counters of all units.
    pub fn dense_counters(&self) -> u64 {
        self.dense_used
    }

    /// How many units count in sparse regions and how many in hash tables.
    pub fn sparse_and_hashed(&self) -> (usize, usize) {
        let count = |f: fn(&PathStorage) -> bool| self.units.iter().filter(|u| f(&u.storage)).count();
        (count(|s| matches!(s, PathStorage::Sparse { .. })), count(|s| matches!(s, PathStorage::Hashed { .. })))
    }
}

/// The module's counter globals: the dense array (plus an unowned scratch slot when edge mode counts through
/// PHIs), the path tables and the sparse regions. Created once per module, in this order.
pub struct CounterStorage {
    array: LLVMValueRef,
    array_len: u64,
    counters: Counters,
    tables: PathTables,
    regions: Vec<Region>,
    region_counters: Vec<Counters>,
    updates: CounterUpdates,
}

impl CounterStorage {
    /// Emits the globals `layout` needs; `scratch_slot` adds the slot [`Counters::scratch`] names.
    pub fn emit(m: LLVMModuleRef, config: &Config, layout: &CounterLayout, scratch_slot: bool) -> CounterStorage {
        let updates = CounterUpdates::of(config);
        let dense = layout.dense_used;
        let array_len = (dense + u64::from(scratch_slot)).max(1);
        let array = globals::counter_array(m, array_len);
        let counters = Counters::new(m, array, array_len, updates, dense);
        let hashed: Vec<u64> = (0..layout.units.len() as u64)
            .filter(|&i| matches!(layout.units[i as usize].storage, PathStorage::Hashed { .. }))
            .collect();
        // One cache size for the module's tables: the largest hashed unit's.
        let blocks = hashed.iter().map(|&i| layout.units[i as usize].blocks).max().unwrap_or(0);
        let tables = PathTables::new(m, &hashed, config.cache_pairs(blocks));
        let regions: Vec<Region> = layout
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| matches!(u.storage, PathStorage::Sparse { .. }))
            .map(|(i, u)| Region::new(m, i as u64, u.slots))
            .collect();
        let region_counters = regions.iter().map(|r| Counters::indirect(m, r.cell, r.len, updates)).collect();
        CounterStorage { array, array_len, counters, tables, regions, region_counters, updates }
    }

    /// The dense array, for edge mode's per-edge counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Where a unit with `storage` and first dense counter `base` counts.
    pub fn sink(&self, m: LLVMModuleRef, storage: PathStorage, base: u64) -> Sink<'_> {
        match storage {
            PathStorage::Dense => Sink::Dense { counters: &self.counters, base },
            PathStorage::Sparse { region } => Sink::Dense { counters: &self.region_counters[region as usize], base: 0 },
            PathStorage::Hashed { table } => Sink::Hashed {
                counters: &self.counters,
                update: self.tables.update(m, table as usize, self.updates == CounterUpdates::Atomic),
            },
        }
    }

    /// Completes the functions counting in sparse regions ([`Counters::finish_indirect`]), then emits the metadata
    /// blob, the runtime descriptor naming these globals, and its registering constructor.
    pub fn register(&self, m: LLVMModuleRef, meta: &ModuleMeta) {
        for counters in &self.region_counters {
            counters.finish_indirect(m);
        }
        let atomic = self.updates == CounterUpdates::Atomic;
        globals::register_module(m, meta, self.array, self.array_len, atomic, &self.tables, &self.regions);
    }
}

/// Where one unit's path counts go, as its emitter sees them.
pub enum Sink<'a> {
    /// `counters[base + path]`: the dense array or a sparse region.
    Dense {
        /// The array.
        counters: &'a Counters,
        /// The unit's first slot.
        base: u64,
    },
    /// The unit's run-time hash table (`PathTable`).
    Hashed {
        /// The module's counters (for the builder and constants).
        counters: &'a Counters,
        /// How to update the table.
        update: TableUpdate,
    },
}

impl<'a> Sink<'a> {
    /// The counters whose builder and constants the emitter uses.
    pub fn counters(&self) -> &'a Counters {
        match self {
            Sink::Dense { counters, .. } | Sink::Hashed { counters, .. } => counters,
        }
    }

    /// `count[slot] += delta` before `before`, for a run-time `slot` numbered within the unit and an i64 `delta`.
    pub fn add_before(&self, before: LLVMValueRef, slot: LLVMValueRef, delta: LLVMValueRef) {
        let b = self.counters().builder();
        match self {
            Sink::Dense { counters, base } => {
                let index = if *base == 0 {
                    slot
                } else {
                    unsafe {
                        LLVMPositionBuilderBefore(b, before);
                        LLVMBuildAdd(b, slot, counters.const_index(*base), c"pathprof.index".as_ptr())
                    }
                };
                counters.add_value_before(before, Err(index), delta)
            }
            Sink::Hashed { update, .. } => {
                unsafe { LLVMPositionBuilderBefore(b, before) };
                update.build(b, slot, delta);
            }
        }
    }
}
