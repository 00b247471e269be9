//! The statement-level, labelled control-flow graph slicing works on (Ball's thesis, §5.1.2 and §6.1.1).
//!
//! Vertices are single statements (or instructions). `ENTRY` ([`ProgramGraph::ENTRY`]) is a predicate whose
//! false-successor is `EXIT` ([`ProgramGraph::EXIT`]), so every vertex has a control-dependence ancestor. Each arc
//! carries the [`Label`] of the successor it is (the successor index: `TRUE`/`FALSE` for a predicate, the case
//! number for a multiway branch, `Label(0)` for a fall-through statement), and a `dummy` flag: a jump (`break`,
//! `continue`, `goto`, `halt`/`return`) is a pseudo-predicate whose true arc goes to its target and whose false arc
//! — the dummy arc, never executed — goes to its continuation (thesis Fig. 6.3, the augmented CFG). Dummy arcs
//! shape postdominance and control dependence but carry no data.
//!
//! Each vertex lists the abstract locations it defines and uses ([`Loc`]): strong definitions (`defs`, they kill
//! earlier definitions of the location) and weak ones (`may_defs`, a store through a pointer into a may-alias
//! class: they kill nothing). Dependences the caller already knows exactly (SSA def-use chains) are given as
//! [`ProgramGraph::add_direct_dependence`] and skip the dataflow.

use crate::graph::typed_index;

typed_index!(
    /// A vertex of a [`ProgramGraph`]: a statement, predicate or jump, or ENTRY / EXIT.
    StmtId,
    "s"
);
typed_index!(
    /// An abstract location: a variable, or a class of memory that may alias.
    Loc,
    "loc"
);

/// Which successor of its source an arc is: unique among the source's out-arcs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Label(pub u32);

impl Label {
    /// A predicate's (or jump's) true successor; also the only successor of a fall-through statement.
    pub const TRUE: Label = Label(0);
    /// A predicate's false successor; a jump's dummy continuation arc.
    pub const FALSE: Label = Label(1);
    /// The never-taken arc [`super::Postdominators`] adds from an infinite loop to EXIT (not a stored arc).
    pub const NEVER: Label = Label(u32::MAX);
}

/// One labelled arc of a [`ProgramGraph`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Arc {
    /// Source vertex.
    pub from: StmtId,
    /// Which successor of `from` this is.
    pub label: Label,
    /// Target vertex.
    pub to: StmtId,
    /// A jump's continuation arc: in the graph for control dependence, never executed, no data flows along it.
    pub dummy: bool,
}

/// What one vertex reads and writes, for flow dependence.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Vertex {
    /// Locations the vertex certainly overwrites (kill earlier definitions).
    pub defs: Vec<Loc>,
    /// Locations the vertex may overwrite (a may-alias store): a definition that kills nothing.
    pub may_defs: Vec<Loc>,
    /// Locations the vertex reads.
    pub uses: Vec<Loc>,
}

/// Why a [`ProgramGraph`] is not a well-formed labelled CFG.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramGraphError {
    /// An arc or dependence names a vertex that does not exist.
    #[error("{0} is not a vertex")]
    NoSuchVertex(StmtId),
    /// EXIT has successors, or ENTRY has predecessors.
    #[error("arc {from} -> {to}: EXIT has no successors and ENTRY no predecessors")]
    BadEndpoint {
        /// Source.
        from: StmtId,
        /// Target.
        to: StmtId,
    },
    /// Two out-arcs of one vertex carry the same label.
    #[error("{0} has two successors labelled {1:?}")]
    DuplicateLabel(StmtId, Label),
    /// A vertex other than EXIT has no executable (non-dummy) successor.
    #[error("{0} has no executable successor")]
    NoSuccessor(StmtId),
    /// `Label::NEVER` is reserved for the virtual exit arcs of infinite loops.
    #[error("{0} uses the reserved label NEVER")]
    ReservedLabel(StmtId),
}

/// A statement-level labelled CFG with def/use sets; see the module docs. Serialisable so that two versions'
/// graphs, built by the pass, can be compared by `pathprof diff-program` (a read graph is checked by
/// [`ProgramGraph::validate`] before any algorithm runs on it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProgramGraph {
    vertices: Vec<Vertex>,
    arcs: Vec<Arc>,
    direct: Vec<(StmtId, StmtId)>,
}

impl Default for ProgramGraph {
    fn default() -> Self {
        Self::new()
    }
}

impl ProgramGraph {
    /// The ENTRY vertex: a predicate whose false arc (dummy) goes to EXIT.
    pub const ENTRY: StmtId = StmtId(0);
    /// The EXIT vertex.
    pub const EXIT: StmtId = StmtId(1);

    /// A graph with ENTRY, EXIT and the dummy arc ENTRY -F-> EXIT; the caller adds ENTRY -T-> first statement.
    pub fn new() -> ProgramGraph {
        let mut g =
            ProgramGraph { vertices: vec![Vertex::default(), Vertex::default()], arcs: Vec::new(), direct: Vec::new() };
        g.add_arc(Self::ENTRY, Label::FALSE, Self::EXIT, true);
        g
    }

    /// Adds a vertex and returns its id (ids are dense, in order of addition, after ENTRY and EXIT).
    pub fn add_vertex(&mut self, v: Vertex) -> StmtId {
        self.vertices.push(v);
        StmtId::from_index(self.vertices.len() - 1)
    }

    /// Adds the arc `from -label-> to`; `dummy` for a jump's never-executed continuation arc.
    pub fn add_arc(&mut self, from: StmtId, label: Label, to: StmtId, dummy: bool) {
        self.arcs.push(Arc { from, label, to, dummy });
    }

    /// Records that `user` reads what `def` wrote, known exactly (an SSA value), without reaching definitions.
    pub fn add_direct_dependence(&mut self, def: StmtId, user: StmtId) {
        self.direct.push((def, user));
    }

    /// Number of vertices, ENTRY and EXIT included.
    pub fn num_vertices(&self) -> usize {
        self.vertices.len()
    }

    /// All vertex ids.
    pub fn vertex_ids(&self) -> impl Iterator<Item = StmtId> {
        (0..self.vertices.len()).map(StmtId::from_index)
    }

    /// One vertex's def/use sets.
    pub fn vertex(&self, v: StmtId) -> &Vertex {
        &self.vertices[v.index()]
    }

    /// All arcs, in order of addition.
    pub fn arcs(&self) -> &[Arc] {
        &self.arcs
    }

    /// The direct dependences, (definition, user).
    pub fn direct_dependences(&self) -> &[(StmtId, StmtId)] {
        &self.direct
    }

    /// Out-arcs (indices into [`ProgramGraph::arcs`]) per vertex, sorted by label.
    pub fn out_arcs(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.vertices.len()];
        for (i, a) in self.arcs.iter().enumerate() {
            out[a.from.index()].push(i);
        }
        for list in &mut out {
            list.sort_by_key(|&i| self.arcs[i].label);
        }
        out
    }

    /// Checks the invariants every algorithm of [`super`] relies on; a graph from IR is checked once here.
    pub fn validate(&self) -> Result<(), ProgramGraphError> {
        let n = self.vertices.len();
        let check = |v: StmtId| if v.index() < n { Ok(()) } else { Err(ProgramGraphError::NoSuchVertex(v)) };
        for a in &self.arcs {
            check(a.from)?;
            check(a.to)?;
            if a.from == Self::EXIT || a.to == Self::ENTRY {
                return Err(ProgramGraphError::BadEndpoint { from: a.from, to: a.to });
            }
            if a.label == Label::NEVER {
                return Err(ProgramGraphError::ReservedLabel(a.from));
            }
        }
        for &(d, u) in &self.direct {
            check(d)?;
            check(u)?;
        }
        let out = self.out_arcs();
        for (v, list) in out.iter().enumerate() {
            let v = StmtId::from_index(v);
            for w in list.windows(2) {
                if self.arcs[w[0]].label == self.arcs[w[1]].label {
                    return Err(ProgramGraphError::DuplicateLabel(v, self.arcs[w[0]].label));
                }
            }
            if v != Self::EXIT && !list.iter().any(|&i| !self.arcs[i].dummy) {
                return Err(ProgramGraphError::NoSuccessor(v));
            }
        }
        Ok(())
    }
}
