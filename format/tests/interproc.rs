//! Context and piecewise profiles: decoding module-wide Melski–Reps paths, counts derived from them, and
//! corrupt interprocedural data, on a synthetic two-function module whose paths are derived by hand.
//!
//! main: bb0 calls f (call block), bb1 is the return site, which returns. f: bb0 branches to bb1 or bb2, both
//! return. f is only called from main (not externally entered), so context mode has exactly two paths:
//! main→f.bb1→main (number 0, f's first successor) and main→f.bb2→main (number 1).

use pathprof_core::graph::test_cfg;
use pathprof_core::interproc::{CallSite, Callee, ProcId};
use pathprof_core::{BlockId, Cfg};
use pathprof_format::meta::{BlockMeta, FunctionMeta, InterprocMeta, InterprocProc, Mode, ModuleMeta, PathStorage};
use pathprof_format::profile::{cfg_hash, module_path_counts, read, write, ModuleProfile, Profile, SparseEntry};

fn function(name: &str, cfg: Cfg) -> FunctionMeta {
    FunctionMeta {
        name: name.into(),
        display_name: String::new(),
        file: "m.c".into(),
        start_line: 1,
        blocks: vec![BlockMeta { lines: vec![] }; cfg.num_blocks()],
        edge_counters: vec![None; cfg.num_edges()],
        counter_base: 0,
        num_counters: 0,
        reentry_blocks: vec![],
        cfg_hash: cfg_hash(&cfg),
        path: None,
        cfg,
    }
}

fn module(mode: Mode, num_paths: u128, storage: PathStorage) -> ModuleMeta {
    ModuleMeta {
        module_name: "m.c".into(),
        mode,
        weighting: "llvm".into(),
        atomic: false,
        functions: vec![function("main", test_cfg(2, &[(0, 1)], &[1])), function("f", test_cfg(3, &[(0, 1), (0, 2)], &[1, 2]))],
        interproc: Some(InterprocMeta {
            procs: vec![
                InterprocProc {
                    call_sites: vec![CallSite { block: BlockId(0), callee: Callee::Proc(ProcId::from_index(1)) }],
                    external_entry: true,
                },
                InterprocProc { call_sites: vec![], external_entry: false },
            ],
            num_paths,
            storage,
            budget_cuts: 0,
        }),
        path_arrivals: false,
    }
}

#[test]
fn dense_context_paths_decode_across_the_call_and_derive_counts() {
    let m = ModuleProfile::new(module(Mode::Context, 2, PathStorage::Dense), vec![3, 5], vec![], 0, 1);
    // Through the writer and reader: the interprocedural metadata survives.
    let bytes = write(&Profile { modules: vec![m] });
    let p = read(&bytes).unwrap();
    let mp = module_path_counts(&p.modules[0]).unwrap();
    assert_eq!(mp.num_paths, 2);
    let counts: Vec<(u128, i64)> = mp.paths.iter().map(|c| (c.number, c.count)).collect();
    assert_eq!(counts, [(0, 3), (1, 5)]);
    let f_blocks: Vec<(ProcId, BlockId)> = mp.paths[1].path.blocks().collect();
    let (main, f) = (ProcId::from_index(0), ProcId::from_index(1));
    assert_eq!(f_blocks, [(main, BlockId(0)), (f, BlockId(0)), (f, BlockId(2)), (main, BlockId(1))]);
    // Derived: main and f invoked 8 times, f's branches 3 and 5, every function exact.
    assert_eq!(mp.functions[0].entry, Some(8));
    assert_eq!(mp.functions[1].entry, Some(8));
    assert_eq!(mp.functions[1].blocks, [Some(8), Some(3), Some(5)]);
    assert!(mp.functions.iter().all(|c| c.exact));
}

#[test]
fn hashed_piecewise_counts_add_up_per_path() {
    let sparse = vec![
        SparseEntry { function: 0, path: 1, count: 2 },
        SparseEntry { function: 0, path: 1, count: 4 },
        SparseEntry { function: 0, path: 0, count: 1 },
    ];
    let m = ModuleProfile::new(module(Mode::Piecewise, 2, PathStorage::Hashed { table: 0 }), vec![0], sparse, 0, 1);
    let mp = module_path_counts(&m).unwrap();
    let counts: Vec<(u128, i64)> = mp.paths.iter().map(|c| (c.number, c.count)).collect();
    assert_eq!(counts, [(0, 1), (1, 6)]);
    assert_eq!(mp.functions[1].blocks, [Some(7), Some(1), Some(6)]);
}

#[test]
fn corrupt_interprocedural_data_is_an_error_not_a_panic() {
    // A recorded path count that the program does not give.
    let m = ModuleProfile::new(module(Mode::Context, 3, PathStorage::Dense), vec![1, 1, 1], vec![], 0, 1);
    let e = module_path_counts(&m).unwrap_err().to_string();
    assert!(e.contains("records 3 paths, but its program gives 2"), "{e}");
    // A path number out of range.
    let sparse = vec![SparseEntry { function: 0, path: 7, count: 1 }];
    let m = ModuleProfile::new(module(Mode::Context, 2, PathStorage::Hashed { table: 0 }), vec![0], sparse, 0, 1);
    let e = module_path_counts(&m).unwrap_err().to_string();
    assert!(e.contains("path 7"), "{e}");
    // Dense counters missing.
    let m = ModuleProfile::new(module(Mode::Context, 2, PathStorage::Dense), vec![1], vec![], 0, 1);
    assert!(module_path_counts(&m).is_err());
    // A call site that breaks the program's shape (the callee index does not exist) is refused when read.
    let mut meta = module(Mode::Context, 2, PathStorage::Dense);
    meta.interproc.as_mut().unwrap().procs[0].call_sites[0].callee = Callee::Proc(ProcId::from_index(9));
    let m = ModuleProfile::new(meta, vec![1, 1], vec![], 0, 1);
    assert!(module_path_counts(&m).is_err());
    // The mode and the program must agree.
    let mut meta = module(Mode::Edge, 2, PathStorage::Dense);
    meta.interproc = None;
    meta.mode = Mode::Context;
    assert!(ModuleMeta::decode(&meta.encode()).is_err());
}
