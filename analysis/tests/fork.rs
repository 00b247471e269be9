//! Fork re-entries in the format: re-entry entries survive write, read and merge; the reader derives exact counts
//! from them in every mode (hand-derived below), refuses them where they cannot come from, and reads a profile
//! without them the way it always has (the resumed activations then make the counts inexact).

use pathprof_analysis::{function_edge_counts, function_path_counts, module_path_counts, AnalysisError, InexactReason};
use pathprof_core::dag::PathDag;
use pathprof_core::dfs::depth_first;
use pathprof_core::fixtures::{early_exit_cfg, setjmp_cfg};
use pathprof_core::interproc::{CallSite, Callee, Event, Execution, ProcId, Simulator};
use pathprof_core::numbering::Numbering;
use pathprof_core::regenerate::encode;
use pathprof_core::{BlockId, Cfg, EdgeId};
use pathprof_format::layout::{SPARSE_REENTRY, SPARSE_REENTRY_BLOCK};
use pathprof_format::meta::{
    FunctionMeta, InterprocMeta, InterprocProc, InterprocUnit, Mode, ModuleMeta, PathMeta, PathStorage,
};
use pathprof_format::profile::{merge, read, write, ModuleProfile, Profile, ProfileError, SparseEntry};
use std::collections::BTreeMap;

#[path = "../../format/tests/support/metadata.rs"]
mod metadata;

/// A function of `fork.c` at line 1 without line info; tests set its mode's fields.
fn function(name: &str, cfg: Cfg) -> FunctionMeta {
    FunctionMeta { start_line: 1, ..metadata::function_meta(name, "fork.c", cfg, |_| vec![]) }
}

fn meta(mode: Mode, functions: Vec<FunctionMeta>) -> ModuleMeta {
    ModuleMeta {
        module_name: "fork.c".into(),
        output: String::new(),
        mode,
        weighting: "llvm".into(),
        atomic: false,
        functions,
        interproc: None,
        path_arrivals: mode != Mode::Edge,
        fork_reentries: true,
        left_out: Vec::new(),
        path_loop_resets: pathprof_core::ball_larus::ResetRule::None,
        compilation_dirs: Vec::new(),
    }
}

fn reentry_of_block(function: u64, block: u128, count: u64) -> SparseEntry {
    SparseEntry { function: function | SPARSE_REENTRY | SPARSE_REENTRY_BLOCK, path: block, count }
}

fn reentry_of_path(function: u64, path: u128, count: u64) -> SparseEntry {
    SparseEntry { function: function | SPARSE_REENTRY, path, count }
}

fn some(v: &[u64]) -> Vec<Option<u64>> {
    v.iter().map(|&x| Some(x)).collect()
}

/// Edge mode. `spawn`: bb0 → bb1 → bb2 → return, and bb1 calls something that forks (it may not return: e3).
/// Edges e0 0→1, e1 1→2, e2 2→EXIT, e3 1→EXIT (Termination), e4 EXIT→0; chords e0 (counter 0), e2 (counter 1).
/// One call; the call in bb1 forks; the parent and the child both return through bb2.
fn edge_spawn() -> FunctionMeta {
    let mut f = function("spawn", early_exit_cfg());
    f.edge_counters = vec![Some(0), None, Some(1), None, None];
    f.num_counters = 2;
    f
}

#[test]
fn edge_mode_parent_child_and_merged_profiles_are_exact() {
    // Parent: entered once (e0 = 1), returned (e2 = 1). Child: counters zeroed at the fork, bb1 resumed once
    // (its re-entry), returned (e2 = 1).
    let parent = ModuleProfile::new(meta(Mode::Edge, vec![edge_spawn()]), vec![1, 1], vec![], 0, 1);
    let child =
        ModuleProfile::new(meta(Mode::Edge, vec![edge_spawn()]), vec![0, 1], vec![reentry_of_block(0, 1, 1)], 0, 1);
    let [parent, child]: [Profile; 2] = [parent, child].map(|m| read(&write(&Profile { modules: vec![m] })).unwrap());
    let merged = merge(&[parent.clone(), child.clone()]).unwrap();
    assert_eq!(merged.modules[0].counters, [1, 2]);
    assert_eq!(merged.modules[0].sparse, [reentry_of_block(0, 1, 1)]);

    let c = function_edge_counts(&parent.modules[0], 0).unwrap();
    assert_eq!((c.edges.clone(), c.exact), (some(&[1, 1, 1, 0, 1]), true));
    // The child: nothing entered, bb1 resumed and left through e1, bb2 returned; no abnormal departure.
    let c = function_edge_counts(&child.modules[0], 0).unwrap();
    assert_eq!(c.edges, some(&[0, 1, 1, 0, 0]));
    assert_eq!(c.blocks, some(&[0, 1, 1]));
    assert_eq!(c.fork_reentries, [0, 1, 0]);
    assert!(c.exact, "{:?}", c.inexact_reasons);
    // Merged: one invocation, bb1 entered once and resumed once, both went on: the code after the call ran twice.
    let c = function_edge_counts(&merged.modules[0], 0).unwrap();
    assert_eq!(c.edges, some(&[1, 2, 2, 0, 1]));
    assert_eq!(c.blocks, some(&[1, 2, 2]));
    assert_eq!(c.fork_reentries, [0, 1, 0]);
    assert_eq!(c.entry, Some(1));
    assert!(c.exact, "{:?}", c.inexact_reasons);

    // The same counters without the re-entry: bb1 left once more than entered, abnormal exits -1: inexact.
    let blind = ModuleProfile::new(meta(Mode::Edge, vec![edge_spawn()]), vec![1, 2], vec![], 0, 1);
    let c = function_edge_counts(&blind, 0).unwrap();
    assert!(!c.exact);
    assert_eq!(c.raw_edges[3], -1);
}

#[test]
fn reentry_entries_are_checked() {
    // Re-entry entries in a module that does not record them.
    let mut m = meta(Mode::Edge, vec![edge_spawn()]);
    m.fork_reentries = false;
    let bad = ModuleProfile::new(m, vec![0, 1], vec![reentry_of_block(0, 1, 1)], 0, 1);
    let e = read(&write(&Profile { modules: vec![bad] })).unwrap_err();
    assert!(matches!(e, ProfileError::UnexpectedReentries { .. }), "{e}");
    // A re-entry of a function the module does not have; a path count with a stray flag bit.
    for s in [reentry_of_block(1, 1, 1), SparseEntry { function: SPARSE_REENTRY_BLOCK, path: 1, count: 1 }] {
        let bad = ModuleProfile::new(meta(Mode::Edge, vec![edge_spawn()]), vec![0, 1], vec![s], 0, 1);
        let e = read(&write(&Profile { modules: vec![bad] })).unwrap_err();
        assert!(matches!(e, ProfileError::SparseFunctionOutOfRange { .. }), "{e}");
    }
    // A re-entry of a block without a call that may not return, and an edge-mode re-entry of a path.
    let m = ModuleProfile::new(meta(Mode::Edge, vec![edge_spawn()]), vec![0, 1], vec![reentry_of_block(0, 2, 1)], 0, 1);
    assert!(matches!(function_edge_counts(&m, 0), Err(AnalysisError::Propagate { .. })));
    let m = ModuleProfile::new(meta(Mode::Edge, vec![edge_spawn()]), vec![0, 1], vec![reentry_of_path(0, 1, 1)], 0, 1);
    let e = function_edge_counts(&m, 0).unwrap_err();
    assert!(matches!(e, AnalysisError::Reentry { .. }), "{e}");
}

/// Path mode on `setjmp_cfg` (bb1 and bb2 hold calls that may not return; no `setjmp` here): paths 0 [bb0 bb1
/// bb2 bb3 return], 1 [bb0 bb1 bb2, left abnormally], 2 [bb0 bb1 bb3 return], 3 [bb0 bb1, left abnormally].
/// One call; the call in bb2 forks; both processes return through bb3 (path 0). The parent counted arrivals at
/// bb1 (path 3) and bb2 (path 1) and path 0; the child counted path 0 and recorded a re-entry of path 1.
fn path_spawn() -> FunctionMeta {
    let cfg = setjmp_cfg();
    let adj = cfg.adjacency();
    let dag = PathDag::build(&cfg, &adj, &depth_first(&cfg, &adj));
    let n = Numbering::compute(&dag).unwrap();
    // Path 0 is bb0 bb1 bb2 bb3 (e0 e1 e3 e4); path 1 is e0 e1 e6.
    let dag_of = |edges: &[u32]| -> Vec<_> {
        edges
            .iter()
            .map(|&e| match dag.cfg_edge_role(EdgeId(e)) {
                pathprof_core::dag::CfgEdgeRole::Real(d) => d,
                r => panic!("{r:?}"),
            })
            .collect()
    };
    assert_eq!(encode(&dag, &n, &dag_of(&[0, 1, 3, 4])), Ok(0));
    assert_eq!(encode(&dag, &n, &dag_of(&[0, 1, 6])), Ok(1));
    let mut f = function("spawn", cfg);
    f.path = Some(PathMeta { budget: 1 << 63, num_paths: 4, storage: PathStorage::Dense, instrumented_edges: vec![] });
    f.num_counters = 4;
    f
}

#[test]
fn path_mode_truncated_paths_carry_their_reentries() {
    let parent = ModuleProfile::new(meta(Mode::Path, vec![path_spawn()]), vec![1, 1, 0, 1], vec![], 0, 1);
    let child = ModuleProfile::new(
        meta(Mode::Path, vec![path_spawn()]),
        vec![1, 0, 0, 0],
        vec![reentry_of_path(0, 1, 1)],
        0,
        1,
    );
    let [parent, child]: [Profile; 2] = [parent, child].map(|m| read(&write(&Profile { modules: vec![m] })).unwrap());
    let merged = merge(&[parent.clone(), child.clone()]).unwrap();
    // Block counts: bb0 once, bb1 once, bb2 once entered + once resumed, bb3 twice; nobody left abnormally.
    let c = function_edge_counts(&merged.modules[0], 0).unwrap();
    //                        e0 e1 e2 e3 e4 e5 e6 e7
    assert_eq!(c.edges, some(&[1, 1, 0, 2, 2, 0, 0, 1]));
    assert_eq!(c.blocks, some(&[1, 1, 2, 2]));
    assert_eq!(c.fork_reentries, [0, 0, 1, 0]);
    assert!(c.exact, "{:?}", c.inexact_reasons);
    // The path view: path 0 twice, path 1 nets to −1 with one re-entry (0 departures): a re-entry correction.
    let fp = function_path_counts(&merged.modules[0], 0).unwrap();
    let got: Vec<(u128, i64, i64, bool)> =
        fp.paths.iter().map(|p| (p.number, p.count, p.fork_reentries, p.is_reentry_correction())).collect();
    assert_eq!(got, [(0, 2, 0, false), (1, -1, 1, true)]);
    assert_eq!(fp.paths[1].departures(), 0);
    // The child alone: bb2 resumed, bb3 returned, nothing entered.
    let c = function_edge_counts(&child.modules[0], 0).unwrap();
    assert_eq!(c.edges, some(&[0, 0, 0, 1, 1, 0, 0, 0]));
    assert_eq!(c.blocks, some(&[0, 0, 1, 1]));
    assert!(c.exact, "{:?}", c.inexact_reasons);
    // Without the re-entry, the merged counters make path 1 negative: inexact.
    let blind = ModuleProfile::new(meta(Mode::Path, vec![path_spawn()]), vec![2, 1, 0, 1], vec![], 0, 1);
    let c = function_edge_counts(&blind, 0).unwrap();
    assert!(c.inexact_reasons.contains(&InexactReason::NegativePath { path: 1, count: -1 }));
    // Two re-entries cannot explain −1 the other way round: a re-entry more than the prefixes that went on
    // leaves path 1 with a departure (exact: a child left bb2 abnormally after resuming it).
    let two = ModuleProfile::new(
        meta(Mode::Path, vec![path_spawn()]),
        vec![2, 1, 0, 1],
        vec![reentry_of_path(0, 1, 2)],
        0,
        1,
    );
    let c = function_edge_counts(&two, 0).unwrap();
    assert_eq!(c.edges[6], Some(1));
    assert!(c.exact);
    // Re-entries of a completed path or of a block are refused.
    for s in [reentry_of_path(0, 0, 1), reentry_of_block(0, 2, 1)] {
        let m = ModuleProfile::new(meta(Mode::Path, vec![path_spawn()]), vec![1, 0, 0, 0], vec![s], 0, 1);
        assert!(function_edge_counts(&m, 0).is_err());
    }
}

/// Context and piecewise: main's bb0 calls f (an interprocedural call that may not return), bb1 returns; f's bb0
/// branches to bb1 (a call that may not return, then return) or bb2 (return). The call in f's bb1 forks: both
/// processes return from f and main. The child recorded one re-entry of f's truncated path at bb1 and one of
/// main's call block. Counts and re-entries come from the simulator of the runtime.
#[test]
fn interprocedural_profiles_with_reentries_are_exact() {
    let (main_cfg, f_cfg) = pathprof_core::fixtures::may_not_return_pair_cfgs();
    for mode in [Mode::Context, Mode::Piecewise] {
        let mut m = meta(mode, vec![function("main", main_cfg.clone()), function("f", f_cfg.clone())]);
        let procs = vec![
            InterprocProc {
                call_sites: vec![CallSite { block: BlockId(0), callee: Callee::Proc(ProcId(1)) }],
                external_entry: true,
                cut_vertices: vec![],
                reset_headers: vec![],
            },
            InterprocProc { call_sites: vec![], external_entry: false, cut_vertices: vec![], reset_headers: vec![] },
        ];
        let (program, ip_mode) = pathprof_analysis::program_of(&ModuleMeta {
            interproc: Some(InterprocMeta {
                procs: procs.clone(),
                num_paths: 0,
                units: vec![InterprocUnit { first_proc: 0, storage: PathStorage::Dense }],
                budget_cuts: 0,
            }),
            ..m.clone()
        })
        .unwrap();
        let sg = pathprof_core::interproc::Supergraph::build(program);
        let num = sg.number(ip_mode).unwrap();
        let num_paths = num.num_paths();
        m.interproc = Some(InterprocMeta {
            procs,
            num_paths,
            budget_cuts: 0,
            units: vec![InterprocUnit { first_proc: 0, storage: PathStorage::Dense }],
        });
        // main calls f, f takes bb0→bb1 (e0), the call there forks; both: f returns (e2), main returns (e2).
        let events = vec![Event::Call, Event::Edge(EdgeId(0)), Event::Return(EdgeId(2)), Event::Return(EdgeId(2))];
        let mut sim = Simulator::counting_arrivals(&num);
        let child = sim.run_forking(&Execution { root: ProcId(0), events: events.clone() }, 2, &events[2..]).unwrap();
        assert_eq!(child.block_reentries, BTreeMap::from([((ProcId(0), BlockId(0)), 1)]));
        let dense = |p: &BTreeMap<u128, u64>| {
            let mut v = vec![0u64; num_paths as usize];
            for (&n, &c) in p {
                v[n as usize] += c;
            }
            v
        };
        let mut sparse: Vec<SparseEntry> =
            child.path_reentries.iter().map(|(&t, &c)| reentry_of_path(1, t, c)).collect();
        sparse.push(reentry_of_block(0, 0, 1));
        let parent = ModuleProfile::new(m.clone(), dense(sim.profile()), vec![], 0, 1);
        let child = ModuleProfile::new(m.clone(), dense(&child.profile), sparse, 0, 1);
        let [parent, child]: [Profile; 2] =
            [parent, child].map(|x| read(&write(&Profile { modules: vec![x] })).unwrap());
        let merged = merge(&[parent, child.clone()]).unwrap();
        for (what, p, main_edges, main_blocks, f_edges, f_blocks) in [
            // Merged: main and f entered once; main's call block and f's bb1 resumed once; everything after the
            // call ran twice; no abnormal departure.
            ("merged", &merged, [2, 0, 2, 1], [2, 2], [1, 0, 2, 0, 0, 1], [1, 2, 0]),
            // The child: only what ran after the fork.
            ("child", &child, [1, 0, 1, 0], [1, 1], [0, 0, 1, 0, 0, 0], [0, 1, 0]),
        ] {
            let mp = module_path_counts(&p.modules[0]).unwrap();
            let (main, f) = (&mp.functions[0], &mp.functions[1]);
            assert_eq!(main.edges, some(&main_edges), "{mode:?} {what}");
            assert_eq!(main.blocks, some(&main_blocks), "{mode:?} {what}");
            assert_eq!(main.fork_reentries, [1, 0], "{mode:?} {what}");
            assert_eq!(f.edges, some(&f_edges), "{mode:?} {what}");
            assert_eq!(f.blocks, some(&f_blocks), "{mode:?} {what}");
            assert_eq!(f.fork_reentries, [0, 1, 0], "{mode:?} {what}");
            assert!(main.exact && f.exact, "{mode:?} {what}: {:?} {:?}", main.inexact_reasons, f.inexact_reasons);
            let corrections: Vec<(i64, i64)> =
                mp.paths.iter().filter(|c| c.fork_reentries != 0).map(|c| (c.count, c.fork_reentries)).collect();
            assert_eq!(corrections, [(-1, 1)], "{mode:?} {what}");
        }
        // A block re-entry of a block that holds no interprocedural call is refused, and so is a path re-entry
        // whose number its function's unit does not have (it would otherwise name another unit's path).
        for entry in [reentry_of_block(1, 1, 1), reentry_of_path(1, num_paths, 1)] {
            let bad = ModuleProfile::new(m.clone(), vec![0; num_paths as usize], vec![entry], 0, 1);
            assert!(module_path_counts(&bad).is_err(), "{mode:?}");
        }
    }
}

/// The small number instrumented code passes names the function and kind of the sparse entry; a value with the
/// top bit set names nothing.
#[test]
fn packed_reentry_names_map_to_sparse_words() {
    use pathprof_format::layout::{reentry_packed, reentry_word};
    assert_eq!(reentry_packed(3, true), 7);
    assert_eq!(reentry_packed(3, false), 6);
    assert_eq!(reentry_word(7), Some(SPARSE_REENTRY | SPARSE_REENTRY_BLOCK | 3));
    assert_eq!(reentry_word(6), Some(SPARSE_REENTRY | 3));
    assert_eq!(reentry_word(u64::MAX), None);
    assert_eq!(reentry_word(1 << 63), None);
}
