//! Context and piecewise profiles: decoding module-wide Melski–Reps paths, counts derived from them, and
//! corrupt interprocedural data, on a synthetic two-function module whose paths are derived by hand.
//!
//! main: bb0 calls f (call block), bb1 is the return site, which returns. f: bb0 branches to bb1 or bb2, both
//! return. f is only called from main (not externally entered), so context mode has exactly two paths:
//! main→f.bb1→main (number 0, f's first successor) and main→f.bb2→main (number 1).

use pathprof_analysis::{module_path_counts, InexactReason};
use pathprof_core::graph::test_cfg;
use pathprof_core::interproc::{CallSite, Callee, ProcId};
use pathprof_core::{BlockId, Cfg};
use pathprof_format::meta::{FunctionMeta, InterprocMeta, InterprocProc, InterprocUnit, Mode, ModuleMeta, PathStorage};
use pathprof_format::profile::{read, write, ModuleProfile, Profile, SparseEntry};

#[path = "../../format/tests/support/metadata.rs"]
mod metadata;

/// A function of `m.c` at line 1 without line info; tests set its mode's fields.
fn function(name: &str, cfg: Cfg) -> FunctionMeta {
    FunctionMeta { start_line: 1, ..metadata::function_meta(name, "m.c", cfg, |_| vec![]) }
}

fn module(mode: Mode, num_paths: u128, storage: PathStorage) -> ModuleMeta {
    ModuleMeta {
        module_name: "m.c".into(),
        output: String::new(),
        mode,
        weighting: "llvm".into(),
        atomic: false,
        functions: vec![
            function("main", test_cfg(2, &[(0, 1)], &[1])),
            function("f", test_cfg(3, &[(0, 1), (0, 2)], &[1, 2])),
        ],
        interproc: Some(InterprocMeta {
            procs: vec![
                InterprocProc {
                    call_sites: vec![CallSite { block: BlockId(0), callee: Callee::Proc(ProcId::from_index(1)) }],
                    external_entry: true,
                    cut_vertices: vec![],
                    reset_headers: vec![],
                },
                InterprocProc {
                    call_sites: vec![],
                    external_entry: false,
                    cut_vertices: vec![],
                    reset_headers: vec![],
                },
            ],
            num_paths,
            budget_cuts: 0,
            units: vec![InterprocUnit { first_proc: 0, storage }],
        }),
        path_arrivals: false,
        fork_reentries: false,
        left_out: Vec::new(),
        path_loop_resets: pathprof_core::ball_larus::ResetRule::None,
        compilation_dirs: Vec::new(),
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
    // Kept without steps (its summary: starts in main, visits both); decoded again on demand.
    let f_blocks: Vec<(ProcId, BlockId)> = mp.decoder().unwrap().decode(1).unwrap().blocks().collect();
    let (main, f) = (ProcId::from_index(0), ProcId::from_index(1));
    assert_eq!(f_blocks, [(main, BlockId(0)), (f, BlockId(0)), (f, BlockId(2)), (main, BlockId(1))]);
    assert_eq!((mp.paths[1].home, &mp.paths[1].visits[..]), (Some(main), &[main, f][..]));
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
fn a_path_number_out_of_range_flags_every_function_of_the_module_and_keeps_the_rest() {
    // Path numbers are module-wide, so a count for path 7 of a 2-path program cannot be pinned on a function.
    let sparse = vec![
        SparseEntry { function: 0, path: 0, count: 3 },
        SparseEntry { function: 0, path: 1, count: 5 },
        SparseEntry { function: 0, path: 7, count: 1 },
    ];
    let m = ModuleProfile::new(module(Mode::Context, 2, PathStorage::Hashed { table: 0 }), vec![0], sparse, 0, 1);
    let mp = module_path_counts(&m).unwrap();
    let counts: Vec<(u128, i64)> = mp.paths.iter().map(|c| (c.number, c.count)).collect();
    assert_eq!(counts, [(0, 3), (1, 5)], "the in-range paths as without the stray count");
    assert_eq!(mp.functions[1].blocks, [Some(8), Some(3), Some(5)]);
    for f in &mp.functions {
        assert!(!f.exact);
        assert_eq!(f.inexact_reasons, [InexactReason::PathOutOfRange { path: 7, num_paths: 2 }]);
    }
}

#[test]
fn corrupt_interprocedural_data_is_an_error_not_a_panic() {
    // A recorded path count that the program does not give.
    let m = ModuleProfile::new(module(Mode::Context, 3, PathStorage::Dense), vec![1, 1, 1], vec![], 0, 1);
    let e = module_path_counts(&m).unwrap_err().to_string();
    assert!(e.contains("records 3 paths, but its program gives 2"), "{e}");
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

/// main's bb0 calls f and may leave abnormally (through f); f's bb0 branches to bb1 (which may leave
/// abnormally, or returns) or bb2 (returns). Context mode, dense counters, arrival counts.
fn arrival_module() -> ModuleMeta {
    let (main_cfg, f_cfg) = pathprof_core::fixtures::may_not_return_pair_cfgs();
    let mut meta = module(Mode::Context, 4, PathStorage::Dense);
    meta.functions[0] = function("main", main_cfg);
    meta.functions[1] = function("f", f_cfg);
    meta.path_arrivals = true;
    meta
}

/// Arrival counting, by hand, on [`arrival_module`]. main's call block counts no arrivals of its own: f counts
/// the path where it ends. Runs: f went through bb1 and returned 5 times, left through bb1's termination once,
/// went through bb2 3 times. The instrumented program counted bb1's truncated path on each of the 6 arrivals. Read as arrivals: net 1 truncation, main
/// and f entered 9 times, f's bb1 6 times and bb2 3 times, main's return site reached 8 times, all exact.
/// Read as net counts (the flag off), the same counters would claim 6 exits and 14 calls.
#[test]
fn interprocedural_arrival_counts_net_to_the_executions() {
    use pathprof_core::interproc::{decode, PathEnd, Procedure, Program, Supergraph};
    let meta = arrival_module();
    let ip = meta.interproc.as_ref().unwrap();
    let program = Program::new(vec![
        Procedure {
            cfg: meta.functions[0].cfg.clone(),
            call_sites: ip.procs[0].call_sites.clone(),
            external_entry: true,
            cut_vertices: vec![],
            reset_headers: vec![],
        },
        Procedure {
            cfg: meta.functions[1].cfg.clone(),
            call_sites: vec![],
            external_entry: false,
            cut_vertices: vec![],
            reset_headers: vec![],
        },
    ])
    .unwrap();
    let sg = Supergraph::build(program);
    let num = sg.number(pathprof_core::interproc::Mode::Context).unwrap();
    // The 3 paths through f, and main's bb0 left before the call (never counted: main's call block).
    assert_eq!(num.num_paths(), 4);
    let f = ProcId::from_index(1);
    let mut counters = vec![0u64; 4];
    for n in 0..4u128 {
        let p = decode(&num, n).unwrap();
        let through_bb1 = p.blocks().any(|s| s == (f, BlockId(1)));
        counters[n as usize] = match (p.end, through_bb1) {
            (PathEnd::Termination { proc, .. }, _) if proc != f => 0,
            (PathEnd::Termination { .. }, _) => 6,
            (_, true) => 5,
            (_, false) => 3,
        };
    }
    let m = ModuleProfile::new(meta, counters.clone(), vec![], 0, 1);
    let p = read(&write(&Profile { modules: vec![m.clone()] })).unwrap();
    let mp = module_path_counts(&p.modules[0]).unwrap();
    let mut nets: Vec<i64> = mp.paths.iter().map(|c| c.count).collect();
    nets.sort();
    assert_eq!(nets, [1, 3, 5]);
    // Each is kept as a summary — all three start in main and run through f — and decodes again on demand.
    let main = ProcId::from_index(0);
    let decoder = mp.decoder().unwrap();
    for c in &mp.paths {
        assert_eq!((c.home, &c.visits[..]), (Some(main), &[main, f][..]));
        assert_eq!(decoder.decode(c.number).unwrap(), decode(&num, c.number).unwrap());
    }
    assert_eq!(mp.functions[0].entry, Some(9));
    assert_eq!(mp.functions[0].blocks, [Some(9), Some(8)]);
    assert_eq!(mp.functions[1].blocks, [Some(9), Some(6), Some(3)]);
    assert!(mp.functions.iter().all(|c| c.exact));
    let mut as_net = m;
    as_net.meta.path_arrivals = false;
    let mp = module_path_counts(&as_net).unwrap();
    assert_eq!(mp.functions[1].blocks, [Some(14), Some(11), Some(3)], "6 arrivals misread as 6 exits");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Arbitrary counters read as arrivals (dense and hashed, paths in and out of range): a result or an
    /// error, never a panic.
    #[test]
    fn arrival_netting_never_panics_on_arbitrary_counts(
        counters in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..6),
        sparse in proptest::collection::vec((0u128..6, proptest::prelude::any::<u64>()), 0..8),
    ) {
        let dense = ModuleProfile::new(arrival_module(), counters.clone(), vec![], 0, 1);
        let _ = module_path_counts(&dense);
        let mut meta = arrival_module();
        meta.interproc.as_mut().unwrap().units[0].storage = PathStorage::Hashed { table: 0 };
        let sparse = sparse.into_iter().map(|(path, count)| SparseEntry { function: 0, path, count }).collect();
        let _ = module_path_counts(&ModuleProfile::new(meta, vec![0], sparse, 0, 1));
    }
}
