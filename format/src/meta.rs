//! Per-module metadata: what the pass knew when it instrumented the module, embedded in the binary and copied
//! into every profile so that `pathprof` needs neither the binary nor the sources.
//!
//! Encoding: [`META_MAGIC`], a little-endian `u32` [`META_VERSION`], then the [`ModuleMeta`] value in `postcard`
//! encoding. The blob is opaque to the runtime; its fnv1a64 identifies the module build.

use pathprof_core::ball_larus::ResetRule;
use pathprof_core::interproc::CallSite;
use pathprof_core::Cfg;
use serde::{Deserialize, Serialize};

/// First bytes of every metadata blob.
pub const META_MAGIC: [u8; 4] = *b"PPMD";
/// Version of the metadata schema below; readers also accept version 1 (no interprocedural program), version 2
/// (truncated paths count net executions), version 3 (no module output), version 4 (no fork re-entries) and
/// version 5 (no list of the functions left out, no cut vertices in interprocedural programs), versions 6 to 8 (no
/// reset loops in interprocedural programs; 6 also no path-mode loop resets, 7 them as a `bool`), version 9 (one
/// storage unit per interprocedural program) and version 10 (no compilation directory).
pub const META_VERSION: u32 = 11;

/// What the module's counters measure.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Optimal edge profiling (Ball & Larus 1994): one counter per spanning-tree chord.
    Edge,
    /// Ball–Larus path profiling (1996): one counter per acyclic path.
    Path,
    /// Melski–Reps context path profiling (§5): module-wide path numbers that carry the calling context.
    Context,
    /// Melski–Reps piecewise path profiling (§6): module-wide path numbers for pieces crossing calls.
    Piecewise,
    /// Vertex (block) profiling with edge counters (Ball & Larus 1994, §3.3): edge mode's chords minus those whose
    /// counts block counts do not need; `edge_counters` as in edge mode, edge counts not all derivable.
    Block,
    /// Bit tracing (Ball & Larus 1994, §6.2): no counters; an ordered trace of every branch taken
    /// (`crate::trace`).
    Trace,
}

impl Mode {
    /// The name used on the command line, in `PATHPROF_MODE` and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Edge => "edge",
            Mode::Path => "path",
            Mode::Context => "context",
            Mode::Piecewise => "piecewise",
            Mode::Block => "block",
            Mode::Trace => "trace",
        }
    }

    /// Whether path numbers are module-wide Melski–Reps numbers ([`ModuleMeta::interproc`]).
    pub fn is_interprocedural(self) -> bool {
        matches!(self, Mode::Context | Mode::Piecewise)
    }

    /// Whether the counters count edges (edge and block modes) rather than paths.
    pub fn counts_edges(self) -> bool {
        matches!(self, Mode::Edge | Mode::Block)
    }
}

/// Everything the tools need to interpret one module's counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModuleMeta {
    /// The module's name: for a translation unit the source file as given to the compiler; for a program
    /// merged by LTO the file name of the executable or shared object it was linked into.
    pub module_name: String,
    /// Where the module's code went, as an absolute path: the object file or linked output, or — for a compile
    /// whose output is not known (no `-o`, or the plugin used without `pathprof-clang`) — the directory the
    /// compiler ran in, ending in `/`. Empty in metadata before version 4. With [`ModuleMeta::module_name`] it
    /// identifies the module across builds ([`ModuleMeta::name_hash`]): a rebuild of the same output replaces
    /// the old counts, while modules of one name in different outputs (two `util.c` of two libraries, every
    /// LTO-merged shared object) stay apart.
    pub output: String,
    /// What the counters measure.
    pub mode: Mode,
    /// The weighting used for the spanning tree (`uniform`, `bl94`, `llvm`, `profile:FILE`): affects cost only.
    pub weighting: String,
    /// Whether counters were updated atomically (exact under threads).
    pub atomic: bool,
    /// Instrumented functions, in module order.
    pub functions: Vec<FunctionMeta>,
    /// Context and piecewise modes: the program the module-wide path numbers belong to.
    pub interproc: Option<InterprocMeta>,
    /// Path, context and piecewise modes: the counter of a path that ends with a `Termination` edge counts the
    /// *arrivals* at its block (updated once, before the block's first call that may not return), and readers
    /// derive its net count with `pathprof_core::arrivals` (path mode) or `pathprof_core::interproc::arrivals`;
    /// `false` (all profiles of metadata version ≤ 2, and context and piecewise profiles written before
    /// pathprof counted their arrivals): the counter is already net (+1 before the call, −1 after it returned).
    pub path_arrivals: bool,
    /// Every call that may not return compares the process's fork generation before and after it and records a
    /// fork re-entry when a `fork()`ed child resumes it (sparse entries flagged
    /// [`SPARSE_REENTRY`](crate::layout::SPARSE_REENTRY)); `false` for profiles of metadata version ≤ 4, whose
    /// fork children's in-flight activations show up as inconsistent counts.
    pub fork_reentries: bool,
    /// Functions the module defines that the pass could not instrument (each with the reason), so that readers
    /// report them as not profiled instead of letting their absence read as "never ran". Empty for profiles of
    /// metadata version ≤ 5, which did not record them.
    pub left_out: Vec<LeftOutFunction>,
    /// Path mode: which loops the functions' path DAGs restart every path that enters
    /// (`pathprof_core::ball_larus::resets`); readers rebuild them with
    /// `PathDag::build_for_path_mode(…, path_loop_resets)`. `None` for profiles of metadata version ≤ 6 and
    /// builds with `PATHPROF_LOOP_RESETS=0`; `OnePath` for version 7 (whose `true` it was).
    pub path_loop_resets: ResetRule,
    /// The directories a relative source name in [`FunctionMeta::file`] may be relative to, absolute, best first:
    /// the directory the compiler (or, for a program merged by LTO, the linker) ran in, then every other
    /// directory the functions' debug info names files relative to (an LTO program's translation units were
    /// compiled in directories of their own). So the views find the sources of a project compiled with relative
    /// names (`cc -c adler32.c` in each directory of a make build) from anywhere. Empty where unknown and in
    /// metadata before version 11.
    pub compilation_dirs: Vec<String>,
}

/// A function compiled without instrumentation: it ran (or not) uncounted, and no count of the profile covers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOutFunction {
    /// Linkage (mangled) name.
    pub name: String,
    /// Source-level name from debug info (demangled for C++), empty without debug info.
    pub display_name: String,
    /// Source file from debug info, empty without debug info.
    pub file: String,
    /// Line of the function's declaration, 0 without debug info.
    pub start_line: u32,
    /// Why the pass left it out, as its compile-time warning said.
    pub reason: String,
}

/// Melski–Reps facts the decoder needs to rebuild exactly the pass's numbering: the program is a pure function
/// of the functions' `cfg`s and these call sites, and `pathprof_core::interproc::Supergraph::build` plus
/// `number(mode)` of it give the path numbers `0..num_paths`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterprocMeta {
    /// Per function of [`ModuleMeta::functions`] (same order): its call sites and whether code outside the
    /// program may enter it.
    pub procs: Vec<InterprocProc>,
    /// numValidComps(Entry_global): path numbers are `0..num_paths`.
    pub num_paths: u128,
    /// How many direct call sites the budget policy (§8) cut so that `num_paths` fits the budget.
    pub budget_cuts: u32,
    /// The storage units (`pathprof_core::interproc::units`), in procedure order: each unit's paths are one range
    /// of `0..num_paths` (`Supergraph::number_in_units`), counted in storage of its own with numbers local to the
    /// unit. One unit over all procedures before metadata version 10.
    pub units: Vec<InterprocUnit>,
}

/// One storage unit of an [`InterprocMeta`] program: procedures `first_proc` up to the next unit's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterprocUnit {
    /// Its first procedure (an index into [`InterprocMeta::procs`]).
    pub first_proc: u32,
    /// Where its counts live, by path number local to the unit: `Dense` = the module's next counters (units in
    /// order, each taking as many as it has paths); `Sparse`/`Hashed` = the sparse entries whose `function`
    /// field is the unit's index.
    pub storage: PathStorage,
}

/// [`InterprocMeta`] as metadata version 9 wrote it: one unit.
#[derive(Deserialize)]
struct InterprocMetaV9 {
    procs: Vec<InterprocProc>,
    num_paths: u128,
    storage: PathStorage,
    budget_cuts: u32,
}

impl From<InterprocMetaV9> for InterprocMeta {
    fn from(old: InterprocMetaV9) -> InterprocMeta {
        InterprocMeta {
            procs: old.procs,
            num_paths: old.num_paths,
            budget_cuts: old.budget_cuts,
            units: vec![InterprocUnit { first_proc: 0, storage: old.storage }],
        }
    }
}

/// One procedure of an [`InterprocMeta`] program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterprocProc {
    /// Call sites (call block = the block the call ends; its single branch leads to the return site).
    pub call_sites: Vec<CallSite>,
    /// Whether the function may be entered from outside the program (a root).
    pub external_entry: bool,
    /// The function's cut vertices (`pathprof_core::interproc::Procedure::cut_vertices`): a function with too
    /// many paths of its own is cut like path mode cuts one. Empty before metadata version 6.
    pub cut_vertices: Vec<u32>,
    /// The function's reset loop headers (`pathprof_core::interproc::Procedure::reset_headers`): every path
    /// entering such a loop restarts at its header. Empty before metadata version 9.
    pub reset_headers: Vec<u32>,
}

/// [`InterprocMeta`] as metadata versions 6 to 8 wrote it: procedures without reset loops.
#[derive(Deserialize)]
struct InterprocMetaV8 {
    procs: Vec<InterprocProcV8>,
    num_paths: u128,
    storage: PathStorage,
    budget_cuts: u32,
}

/// [`InterprocProc`] of metadata versions 6 to 8.
#[derive(Deserialize)]
struct InterprocProcV8 {
    call_sites: Vec<CallSite>,
    external_entry: bool,
    cut_vertices: Vec<u32>,
}

impl From<InterprocMetaV8> for InterprocMeta {
    fn from(old: InterprocMetaV8) -> InterprocMeta {
        InterprocMetaV9 {
            procs: old
                .procs
                .into_iter()
                .map(|p| InterprocProc {
                    call_sites: p.call_sites,
                    external_entry: p.external_entry,
                    cut_vertices: p.cut_vertices,
                    reset_headers: Vec::new(),
                })
                .collect(),
            num_paths: old.num_paths,
            storage: old.storage,
            budget_cuts: old.budget_cuts,
        }
        .into()
    }
}

/// [`InterprocMeta`] as metadata versions 2 to 5 wrote it: procedures without cut vertices.
#[derive(Deserialize)]
struct InterprocMetaV5 {
    procs: Vec<InterprocProcV5>,
    num_paths: u128,
    storage: PathStorage,
    budget_cuts: u32,
}

/// [`InterprocProc`] before metadata version 6.
#[derive(Deserialize)]
struct InterprocProcV5 {
    call_sites: Vec<CallSite>,
    external_entry: bool,
}

impl From<InterprocMetaV5> for InterprocMeta {
    fn from(old: InterprocMetaV5) -> InterprocMeta {
        let uncut = |p: InterprocProcV5| InterprocProcV8 {
            call_sites: p.call_sites,
            external_entry: p.external_entry,
            cut_vertices: Vec::new(),
        };
        let procs = old.procs.into_iter().map(uncut).collect();
        InterprocMetaV8 { procs, num_paths: old.num_paths, storage: old.storage, budget_cuts: old.budget_cuts }.into()
    }
}

/// One instrumented function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionMeta {
    /// Linkage (mangled) name: the identity used to match functions across profiles.
    pub name: String,
    /// Source-level name from debug info (demangled for C++), empty without debug info.
    pub display_name: String,
    /// Source file from debug info, empty without debug info.
    pub file: String,
    /// Line of the function's declaration (DISubprogram line), 0 without debug info; sample-profile export
    /// computes line offsets from it.
    pub start_line: u32,
    /// The graph the counters were placed on: real blocks in IR order, virtual EXIT, all edges.
    pub cfg: Cfg,
    /// Per real block (IR order): its source description.
    pub blocks: Vec<BlockMeta>,
    /// For each edge of `cfg` (EdgeId order): the index of its counter relative to `counter_base`, or `None`
    /// for spanning-tree edges whose count is derived.
    pub edge_counters: Vec<Option<u32>>,
    /// Index of this function's first counter in the module's dense counter array.
    pub counter_base: u64,
    /// Number of dense counters this function owns.
    pub num_counters: u32,
    /// Blocks that contain a `returns_twice` call (setjmp): their termination edge may be negative, because
    /// control can re-enter them.
    pub reentry_blocks: Vec<u32>,
    /// Hash of `cfg` (structure only), for matching the same code across builds (PGO use).
    pub cfg_hash: u64,
    /// Path mode only: how the function's path numbers were formed and where their counts are.
    pub path: Option<PathMeta>,
}

/// Ball–Larus path numbering facts the decoder needs to rebuild exactly the pass's numbering: the DAG is a
/// pure function of (`cfg`, `budget`) computed by `pathprof_core::dag::PathDag::build_with_budget`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathMeta {
    /// The path-count budget the DAG was cut to (cuts at vertices keep every path number below it).
    pub budget: u128,
    /// NumPaths(ENTRY) of the (possibly cut) DAG: path numbers are `0..num_paths`.
    pub num_paths: u128,
    /// Where the counts of this function's paths live.
    pub storage: PathStorage,
    /// The cfg edges that carry instrumentation code (a path-register increment, or a path count): what
    /// `instrumented` means for a path-mode function.
    pub instrumented_edges: Vec<u32>,
}

/// Storage of path counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PathStorage {
    /// `counters[counter_base + path]` for every path (`num_counters == num_paths`).
    Dense,
    /// Only executed paths, in the runtime hash table number `table` of the module; they reach the profile as
    /// sparse entries keyed by this function's index in `ModuleMeta::functions`.
    Hashed {
        /// Index into the module's `PathTable` array.
        table: u32,
    },
    /// Only executed paths reach the profile, as sparse entries like `Hashed`, from a counter array of the
    /// function's own that the runtime scans (`layout::SparseRegion` number `region` of the module).
    Sparse {
        /// Index into the module's `SparseRegion` array.
        region: u32,
    },
}

/// Source information for one basic block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockMeta {
    /// The distinct source lines of the block's instructions, in order of first appearance (empty without
    /// debug info).
    pub lines: Vec<u32>,
}

/// Why a metadata blob cannot be decoded.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// The blob does not start with [`META_MAGIC`].
    #[error("module metadata has a bad magic number")]
    BadMagic,
    /// A version this reader does not understand.
    #[error("module metadata version {0} is not supported (this pathprof reads version {META_VERSION})")]
    UnsupportedVersion(u32),
    /// The postcard payload is malformed or truncated.
    #[error("module metadata is corrupt: {0}")]
    Corrupt(String),
    /// The decoded value violates an invariant (e.g. an edge counter index out of range).
    #[error("module metadata is inconsistent: {0}")]
    Inconsistent(String),
}

impl ModuleMeta {
    /// Encodes the blob that the pass embeds in the binary.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(&META_MAGIC);
        out.extend_from_slice(&META_VERSION.to_le_bytes());
        // Serialising plain owned data into a Vec cannot fail.
        let payload = postcard::to_allocvec(self).expect("postcard serialisation of metadata");
        out.extend_from_slice(&payload);
        out
    }

    /// The module's identity across builds as hashed into descriptors and record headers
    /// ([`crate::layout::module_identity_hash`] of the name and output).
    pub fn name_hash(&self) -> u64 {
        crate::layout::module_identity_hash(self.module_name.as_bytes(), self.output.as_bytes())
    }

    /// The module for messages: its name, and its output when it has one (`util.c in /b/x/util.o`), so that
    /// two modules of one name are told apart.
    pub fn label(&self) -> String {
        if self.output.is_empty() {
            self.module_name.clone()
        } else {
            format!("{} in {}", self.module_name, self.output)
        }
    }

    /// Decodes and validates a blob read from an untrusted profile; never panics.
    pub fn decode(bytes: &[u8]) -> Result<ModuleMeta, MetaError> {
        let meta = ModuleMeta::decode_unvalidated(bytes)?;
        meta.validate()?;
        Ok(meta)
    }

    /// Decodes a blob (magic, version 1 to 11, postcard, no trailing bytes) without [`ModuleMeta::validate`],
    /// for readers that must check sizes against their input first; never panics.
    pub fn decode_unvalidated(bytes: &[u8]) -> Result<ModuleMeta, MetaError> {
        let magic = bytes.get(0..4).ok_or(MetaError::BadMagic)?;
        if magic != META_MAGIC {
            return Err(MetaError::BadMagic);
        }
        let ver = bytes.get(4..8).ok_or_else(|| MetaError::Corrupt("truncated header".into()))?;
        let ver = u32::from_le_bytes([ver[0], ver[1], ver[2], ver[3]]);
        let payload = bytes.get(8..).unwrap_or(&[]);
        let corrupt = |e: postcard::Error| MetaError::Corrupt(e.to_string());
        let (meta, rest): (ModuleMeta, &[u8]) = match ver {
            META_VERSION => postcard::take_from_bytes(payload).map_err(corrupt)?,
            1..=10 => ModuleMeta::take_older(ver, payload).map_err(corrupt)?,
            _ => return Err(MetaError::UnsupportedVersion(ver)),
        };
        if !rest.is_empty() {
            return Err(MetaError::Corrupt(format!("{} trailing bytes", rest.len())));
        }
        Ok(meta)
    }

    /// Reads the body of metadata version 1 to 10: postcard writes a struct as its fields in order, so an older
    /// body is the current field sequence without the fields added since, each of which gets the value that
    /// describes the older profiles (see the field docs):
    /// version 2 added `interproc`, 3 `path_arrivals`, 4 `output`, 5 `fork_reentries`, 6 `left_out` and the
    /// procedures' `cut_vertices`, 7 `path_loop_resets` (a `bool`: loops of one path), 8 made it a [`ResetRule`],
    /// 9 added the procedures' `reset_headers`, 10 the interprocedural storage `units`, 11 `compilation_dirs`.
    fn take_older(ver: u32, payload: &[u8]) -> postcard::Result<(ModuleMeta, &[u8])> {
        /// The next field, or `absent` in a version before `since`.
        fn field<T: serde::de::DeserializeOwned>(
            ver: u32,
            since: u32,
            absent: T,
            rest: &[u8],
        ) -> postcard::Result<(T, &[u8])> {
            if ver >= since {
                postcard::take_from_bytes(rest)
            } else {
                Ok((absent, rest))
            }
        }
        let (module_name, rest) = postcard::take_from_bytes(payload)?;
        let (output, rest) = field(ver, 4, String::new(), rest)?;
        let (mode, rest) = postcard::take_from_bytes(rest)?;
        let (weighting, rest) = postcard::take_from_bytes(rest)?;
        let (atomic, rest) = postcard::take_from_bytes(rest)?;
        let (functions, rest) = postcard::take_from_bytes(rest)?;
        let (interproc, rest) = if ver >= 10 {
            postcard::take_from_bytes::<Option<InterprocMeta>>(rest)?
        } else if ver == 9 {
            let (old, rest) = postcard::take_from_bytes::<Option<InterprocMetaV9>>(rest)?;
            (old.map(InterprocMeta::from), rest)
        } else if ver >= 6 {
            let (old, rest) = postcard::take_from_bytes::<Option<InterprocMetaV8>>(rest)?;
            (old.map(InterprocMeta::from), rest)
        } else {
            let (old, rest) = field::<Option<InterprocMetaV5>>(ver, 2, None, rest)?;
            (old.map(InterprocMeta::from), rest)
        };
        let (path_arrivals, rest) = field(ver, 3, false, rest)?;
        let (fork_reentries, rest) = field(ver, 5, false, rest)?;
        let (left_out, rest) = field(ver, 6, Vec::new(), rest)?;
        let (path_loop_resets, rest) = match ver {
            8.. => postcard::take_from_bytes(rest)?,
            _ => {
                let (resets, rest) = field(ver, 7, false, rest)?;
                (if resets { ResetRule::OnePath } else { ResetRule::None }, rest)
            }
        };
        let meta = ModuleMeta {
            module_name,
            output,
            mode,
            weighting,
            atomic,
            functions,
            interproc,
            path_arrivals,
            fork_reentries,
            left_out,
            path_loop_resets,
            compilation_dirs: Vec::new(),
        };
        Ok((meta, rest))
    }

    /// Checks the cross-field invariants the tools rely on, so later code may index without panicking.
    pub fn validate(&self) -> Result<(), MetaError> {
        if self.path_arrivals && !matches!(self.mode, Mode::Path | Mode::Context | Mode::Piecewise) {
            return Err(MetaError::Inconsistent(format!("{}-mode module with path arrival counts", self.mode.name())));
        }
        if self.fork_reentries && !self.mode.counts_edges() && !self.path_arrivals {
            return Err(MetaError::Inconsistent("fork re-entries of paths that do not count arrivals".into()));
        }
        for f in &self.functions {
            let bad = |what: &str| Err(MetaError::Inconsistent(format!("function {}: {what}", f.name)));
            // Re-validate the graph: deserialisation bypasses Cfg::new.
            if let Err(e) = Cfg::new(f.cfg.num_blocks() as u32, f.cfg.edges().to_vec()) {
                return bad(&e.to_string());
            }
            if f.blocks.len() != f.cfg.num_blocks() {
                return bad("block list does not match the graph");
            }
            if f.edge_counters.len() != f.cfg.num_edges() {
                return bad("edge counter list does not match the graph");
            }
            // Bound the allocation below by the graph size before trusting the count.
            match (self.mode, &f.path) {
                (Mode::Edge | Mode::Block, None) if f.num_counters as usize <= f.cfg.num_edges() => {}
                (Mode::Edge | Mode::Block, _) => {
                    return bad("edge-mode function with path data or more counters than edges")
                }
                (Mode::Path, Some(p)) => {
                    let dense_ok = match p.storage {
                        PathStorage::Dense => u128::from(f.num_counters) == p.num_paths,
                        PathStorage::Hashed { .. } | PathStorage::Sparse { .. } => f.num_counters == 0,
                    };
                    if !dense_ok
                        || f.edge_counters.iter().any(Option::is_some)
                        || p.instrumented_edges.iter().any(|&e| e as usize >= f.cfg.num_edges())
                    {
                        return bad("path-mode counters do not match the path count");
                    }
                }
                (Mode::Path, None) => return bad("path-mode function without path data"),
                (Mode::Trace, None) if f.num_counters == 0 && f.edge_counters.iter().all(Option::is_none) => {}
                (Mode::Trace, _) => return bad("trace-mode function with counters"),
                (Mode::Context | Mode::Piecewise, None)
                    if f.num_counters == 0 && f.edge_counters.iter().all(Option::is_none) => {}
                (Mode::Context | Mode::Piecewise, _) => return bad("interprocedural function with its own counters"),
            }
            let mut seen = vec![false; f.num_counters as usize];
            for c in f.edge_counters.iter().flatten() {
                match seen.get_mut(*c as usize) {
                    Some(s) if !*s => *s = true,
                    _ => return bad("edge counter index out of range or shared"),
                }
            }
            if f.reentry_blocks.iter().any(|&b| b as usize >= f.cfg.num_blocks()) {
                return bad("re-entry block out of range");
            }
        }
        match (self.mode.is_interprocedural(), &self.interproc) {
            (false, None) => Ok(()),
            (true, Some(ip)) if ip.procs.len() == self.functions.len() && !self.functions.is_empty() => {
                let starts_ok = ip.units.first().is_some_and(|u| u.first_proc == 0)
                    && ip.units.windows(2).all(|w| w[0].first_proc < w[1].first_proc)
                    && ip.units.iter().all(|u| (u.first_proc as usize) < ip.procs.len());
                if starts_ok {
                    Ok(())
                } else {
                    Err(MetaError::Inconsistent("interprocedural storage units do not partition the functions".into()))
                }
            }
            // Every function was left out: the module reports them and has no program.
            (true, None) if self.functions.is_empty() && !self.left_out.is_empty() => Ok(()),
            _ => Err(MetaError::Inconsistent("interprocedural program does not match the mode or functions".into())),
        }
    }
}
