//! Test support: the thesis's statement language (§5.1.1: assignments, output, if, while, repeat, break, halt,
//! goto and labels, plus `continue`), its standard and augmented translations into a [`ProgramGraph`] (Figs. 5.2
//! and 6.3), an interpreter of the resulting CFG that records each vertex's value sequence (§5.1.3), and the
//! program projection of a slice (Fig. 6.2) — so that oracles are written and compared as the thesis prints them.
//!
//! Syntax, as in the thesis's examples: statements separated by `;`, `x:=e`, `output(e)`, `if e then S [else S]
//! fi`, `while e do S od`, `repeat S until e`, `break`, `continue`, `halt`, `goto L`, `L:` (a label, optionally
//! followed by a statement without `;`), and a bare identifier for an opaque statement (`A`). Expressions: integers,
//! variables, `not(e)`, `* %`, `+ -`, `< > =` (loosest).

use super::program::{Label, Loc, ProgramGraph, StmtId, Vertex};
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Expr {
    Const(i64),
    Var(String),
    Not(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stmt {
    /// Preorder number in the program, stable under projection: the correspondence between P and its slice.
    pub(crate) id: usize,
    pub(crate) kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Assign(String, Expr),
    Output(Expr),
    Opaque(String),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    While(Expr, Vec<Stmt>),
    Repeat(Vec<Stmt>, Expr),
    Break,
    Continue,
    Halt,
    Goto(String),
    Label(String),
}

// ---------------------------------------------------------------- parsing

fn tokenize(s: &str) -> Vec<String> {
    let c: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_whitespace() {
            i += 1;
        } else if c[i].is_alphanumeric() || c[i] == '_' {
            let st = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[st..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&'=') {
            out.push(":=".into());
            i += 2;
        } else {
            out.push(c[i].to_string());
            i += 1;
        }
    }
    out
}

struct Parser {
    t: Vec<String>,
    i: usize,
}

const KEYWORDS: [&str; 16] = [
    "if", "then", "else", "fi", "while", "do", "od", "repeat", "until", "break", "continue", "halt", "goto", "output",
    "not", ";",
];

impl Parser {
    fn peek(&self) -> &str {
        self.t.get(self.i).map(|s| s.as_str()).unwrap_or("")
    }
    fn peek2(&self) -> &str {
        self.t.get(self.i + 1).map(|s| s.as_str()).unwrap_or("")
    }
    fn next(&mut self) -> String {
        self.i += 1;
        self.t[self.i - 1].clone()
    }
    fn eat(&mut self, s: &str) {
        assert_eq!(self.peek(), s, "parse error at token {}: {:?}", self.i, &self.t[self.i.min(self.t.len())..]);
        self.i += 1;
    }
    fn seq(&mut self, ends: &[&str]) -> Vec<Stmt> {
        let mut out = Vec::new();
        loop {
            while self.peek() == ";" {
                self.i += 1;
            }
            if self.peek().is_empty() || ends.contains(&self.peek()) {
                return out;
            }
            out.push(self.stmt());
        }
    }
    fn stmt(&mut self) -> Stmt {
        let kind = match self.peek() {
            "if" => {
                self.eat("if");
                let e = self.expr();
                self.eat("then");
                let a = self.seq(&["else", "fi"]);
                let b = if self.peek() == "else" {
                    self.eat("else");
                    self.seq(&["fi"])
                } else {
                    Vec::new()
                };
                self.eat("fi");
                Kind::If(e, a, b)
            }
            "while" => {
                self.eat("while");
                let e = self.expr();
                self.eat("do");
                let b = self.seq(&["od"]);
                self.eat("od");
                Kind::While(e, b)
            }
            "repeat" => {
                self.eat("repeat");
                let b = self.seq(&["until"]);
                self.eat("until");
                Kind::Repeat(b, self.expr())
            }
            "break" | "continue" | "halt" => match self.next().as_str() {
                "break" => Kind::Break,
                "continue" => Kind::Continue,
                _ => Kind::Halt,
            },
            "goto" => {
                self.eat("goto");
                Kind::Goto(self.next())
            }
            "output" => {
                self.eat("output");
                self.eat("(");
                let e = self.expr();
                self.eat(")");
                Kind::Output(e)
            }
            _ if self.peek2() == ":=" => {
                let x = self.next();
                self.eat(":=");
                Kind::Assign(x, self.expr())
            }
            _ if self.peek2() == ":" => {
                let l = self.next();
                self.eat(":");
                Kind::Label(l)
            }
            w => {
                assert!(!KEYWORDS.contains(&w) && !w.is_empty(), "unexpected token {w:?}");
                Kind::Opaque(self.next())
            }
        };
        Stmt { id: 0, kind }
    }
    fn expr(&mut self) -> Expr {
        let a = self.sum();
        if ["<", ">", "="].contains(&self.peek()) {
            let op = self.next().chars().next().unwrap();
            return Expr::Bin(op, Box::new(a), Box::new(self.sum()));
        }
        a
    }
    fn sum(&mut self) -> Expr {
        let mut a = self.product();
        while ["+", "-"].contains(&self.peek()) {
            let op = self.next().chars().next().unwrap();
            a = Expr::Bin(op, Box::new(a), Box::new(self.product()));
        }
        a
    }
    fn product(&mut self) -> Expr {
        let mut a = self.atom();
        while ["*", "%"].contains(&self.peek()) {
            let op = self.next().chars().next().unwrap();
            a = Expr::Bin(op, Box::new(a), Box::new(self.atom()));
        }
        a
    }
    fn atom(&mut self) -> Expr {
        let t = self.next();
        if t == "(" {
            let e = self.expr();
            self.eat(")");
            e
        } else if t == "not" {
            self.eat("(");
            let e = self.expr();
            self.eat(")");
            Expr::Not(Box::new(e))
        } else if let Ok(k) = t.parse() {
            Expr::Const(k)
        } else {
            Expr::Var(t)
        }
    }
}

/// Parses a program and numbers its statements in preorder.
pub(crate) fn parse(src: &str) -> Vec<Stmt> {
    let mut p = Parser { t: tokenize(src), i: 0 };
    let mut prog = p.seq(&[]);
    assert_eq!(p.i, p.t.len(), "trailing tokens");
    number(&mut prog, &mut 0);
    prog
}

/// Numbers statements in preorder (the ids the correspondence between a program and its projection uses).
pub(crate) fn number(seq: &mut [Stmt], next: &mut usize) {
    for s in seq {
        s.id = *next;
        *next += 1;
        match &mut s.kind {
            Kind::If(_, a, b) => {
                number(a, next);
                number(b, next);
            }
            Kind::While(_, b) | Kind::Repeat(b, _) => number(b, next),
            _ => {}
        }
    }
}

// ---------------------------------------------------------------- printing

fn prec(op: char) -> u8 {
    match op {
        '<' | '>' | '=' => 0,
        '+' | '-' => 1,
        _ => 2,
    }
}

pub(crate) fn show_expr(e: &Expr) -> String {
    match e {
        Expr::Const(k) => k.to_string(),
        Expr::Var(x) => x.clone(),
        Expr::Not(a) => format!("not({})", show_expr(a)),
        Expr::Bin(op, a, b) => {
            let side = |x: &Expr, right: bool| match x {
                Expr::Bin(o, ..) if prec(*o) < prec(*op) || (right && prec(*o) == prec(*op)) => {
                    format!("({})", show_expr(x))
                }
                _ => show_expr(x),
            };
            format!("{}{}{}", side(a, false), op, side(b, true))
        }
    }
}

/// A nested sequence followed by a space, or nothing when it is empty.
fn block(seq: &[Stmt]) -> String {
    if seq.is_empty() {
        String::new()
    } else {
        show(seq) + " "
    }
}

/// The program as the thesis's examples write it, on one line.
pub(crate) fn show(seq: &[Stmt]) -> String {
    let mut out = String::new();
    for (i, s) in seq.iter().enumerate() {
        if i > 0 {
            out += if matches!(seq[i - 1].kind, Kind::Label(_)) { " " } else { "; " };
        }
        out += &match &s.kind {
            Kind::Assign(x, e) => format!("{x}:={}", show_expr(e)),
            Kind::Output(e) => format!("output({})", show_expr(e)),
            Kind::Opaque(a) => a.clone(),
            Kind::If(e, a, b) if b.is_empty() => format!("if {} then {}fi", show_expr(e), block(a)),
            Kind::If(e, a, b) => format!("if {} then {}else {}fi", show_expr(e), block(a), block(b)),
            Kind::While(e, b) => format!("while {} do {}od", show_expr(e), block(b)),
            Kind::Repeat(b, e) => format!("repeat {}until {}", block(b), show_expr(e)),
            Kind::Break => "break".into(),
            Kind::Continue => "continue".into(),
            Kind::Halt => "halt".into(),
            Kind::Goto(l) => format!("goto {l}"),
            Kind::Label(l) => format!("{l}:"),
        };
    }
    out
}

// ---------------------------------------------------------------- translation

/// Standard translation (jumps are arcs, Fig. 5.2) or augmented (jumps are pseudo-predicates, Fig. 6.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Translation {
    Standard,
    Augmented,
}

/// What a vertex does when the interpreter reaches it.
#[derive(Clone, Debug)]
pub(crate) enum Sem {
    Entry,
    Exit,
    Assign(String, Expr),
    Output(Expr),
    Opaque,
    Pred(Expr),
    Jump,
}

/// A translated program: its CFG, each vertex's meaning and text, and the statement ↔ vertex correspondence.
pub(crate) struct Translated {
    pub(crate) g: ProgramGraph,
    pub(crate) sem: Vec<Sem>,
    pub(crate) text: Vec<String>,
    /// statement id -> its vertex (statements that create one).
    pub(crate) vert: HashMap<usize, StmtId>,
    /// vertex -> statement id (ENTRY and EXIT have none).
    pub(crate) stmt_of: Vec<Option<usize>>,
}

impl Translated {
    /// The vertex whose text is `text` (panics unless exactly one).
    pub(crate) fn v(&self, text: &str) -> StmtId {
        let hits: Vec<usize> = (0..self.text.len()).filter(|&i| self.text[i] == text).collect();
        assert_eq!(hits.len(), 1, "vertex {text:?}: {hits:?} in {:?}", self.text);
        StmtId::from_index(hits[0])
    }

    /// All vertices whose text is `text`, in id order.
    pub(crate) fn vs(&self, text: &str) -> Vec<StmtId> {
        (0..self.text.len()).filter(|&i| self.text[i] == text).map(StmtId::from_index).collect()
    }
}

#[derive(Clone, Debug)]
enum Tgt {
    V(StmtId),
    L(String),
}

struct Tr {
    mode: Translation,
    t: Translated,
    locs: HashMap<String, Loc>,
    pending: Vec<(StmtId, Label, Tgt, bool)>,
    labels: HashMap<String, Tgt>,
    loops: Vec<(Tgt, Tgt)>,
}

fn vars(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Const(_) => {}
        Expr::Var(x) => out.push(x.clone()),
        Expr::Not(a) => vars(a, out),
        Expr::Bin(_, a, b) => {
            vars(a, out);
            vars(b, out);
        }
    }
}

impl Tr {
    fn loc(&mut self, x: &str) -> Loc {
        let n = self.locs.len();
        *self.locs.entry(x.to_string()).or_insert(Loc::from_index(n))
    }
    fn vertex(&mut self, s: &Stmt, sem: Sem, text: String, def: Option<&str>, uses: Option<&Expr>) -> StmtId {
        let mut names = Vec::new();
        if let Some(e) = uses {
            vars(e, &mut names);
        }
        let uses: Vec<Loc> = names.iter().map(|x| self.loc(x)).collect();
        let defs: Vec<Loc> = def.iter().map(|x| self.loc(x)).collect();
        let v = self.t.g.add_vertex(Vertex { defs, may_defs: Vec::new(), uses });
        self.t.sem.push(sem);
        self.t.text.push(text);
        self.t.vert.insert(s.id, v);
        self.t.stmt_of.push(Some(s.id));
        v
    }
    fn seq(&mut self, seq: &[Stmt], mut cont: Tgt) -> Tgt {
        for s in seq.iter().rev() {
            cont = self.stmt(s, cont);
        }
        cont
    }
    fn jump(&mut self, s: &Stmt, text: &str, target: Tgt, cont: Tgt) -> Tgt {
        match self.mode {
            Translation::Standard => target,
            Translation::Augmented => {
                let v = self.vertex(s, Sem::Jump, text.to_string(), None, None);
                self.pending.push((v, Label::TRUE, target, false));
                self.pending.push((v, Label::FALSE, cont, true));
                Tgt::V(v)
            }
        }
    }
    fn stmt(&mut self, s: &Stmt, cont: Tgt) -> Tgt {
        let text = show(std::slice::from_ref(s));
        let head = |e: &Expr, kw: &str| format!("{kw} {}", show_expr(e));
        match &s.kind {
            Kind::Assign(x, e) => {
                let v = self.vertex(s, Sem::Assign(x.clone(), e.clone()), text, Some(x), Some(e));
                self.pending.push((v, Label::TRUE, cont, false));
                Tgt::V(v)
            }
            Kind::Output(e) => {
                let v = self.vertex(s, Sem::Output(e.clone()), text, None, Some(e));
                self.pending.push((v, Label::TRUE, cont, false));
                Tgt::V(v)
            }
            Kind::Opaque(a) => {
                let v = self.vertex(s, Sem::Opaque, a.clone(), None, None);
                self.pending.push((v, Label::TRUE, cont, false));
                Tgt::V(v)
            }
            Kind::If(e, a, b) => {
                let v = self.vertex(s, Sem::Pred(e.clone()), head(e, "if"), None, Some(e));
                let ta = self.seq(a, cont.clone());
                let tb = self.seq(b, cont);
                self.pending.push((v, Label::TRUE, ta, false));
                self.pending.push((v, Label::FALSE, tb, false));
                Tgt::V(v)
            }
            Kind::While(e, body) => {
                let v = self.vertex(s, Sem::Pred(e.clone()), head(e, "while"), None, Some(e));
                self.loops.push((cont.clone(), Tgt::V(v)));
                let tb = self.seq(body, Tgt::V(v));
                self.loops.pop();
                self.pending.push((v, Label::TRUE, tb, false));
                self.pending.push((v, Label::FALSE, cont, false));
                Tgt::V(v)
            }
            Kind::Repeat(body, e) => {
                let v = self.vertex(s, Sem::Pred(e.clone()), head(e, "until"), None, Some(e));
                self.loops.push((cont.clone(), Tgt::V(v)));
                let tb = self.seq(body, Tgt::V(v));
                self.loops.pop();
                self.pending.push((v, Label::TRUE, cont, false));
                self.pending.push((v, Label::FALSE, tb.clone(), false));
                tb
            }
            Kind::Break => {
                let target = self.loops.last().expect("break outside a loop").0.clone();
                self.jump(s, &text, target, cont)
            }
            Kind::Continue => {
                let target = self.loops.last().expect("continue outside a loop").1.clone();
                self.jump(s, &text, target, cont)
            }
            Kind::Halt => self.jump(s, &text, Tgt::V(ProgramGraph::EXIT), cont),
            Kind::Goto(l) => self.jump(s, &text, Tgt::L(l.clone()), cont),
            Kind::Label(l) => {
                assert!(self.labels.insert(l.clone(), cont.clone()).is_none(), "label {l} defined twice");
                cont
            }
        }
    }
    fn resolve(&self, mut t: Tgt) -> StmtId {
        for _ in 0..=self.labels.len() {
            match t {
                Tgt::V(v) => return v,
                Tgt::L(l) => t = self.labels.get(&l).unwrap_or_else(|| panic!("goto to undefined label {l}")).clone(),
            }
        }
        panic!("labels form a cycle: the program has no CFG under this translation")
    }
}

/// Translates a program into its (standard or augmented) CFG.
pub(crate) fn translate(prog: &[Stmt], mode: Translation) -> Translated {
    let t = Translated {
        g: ProgramGraph::new(),
        sem: vec![Sem::Entry, Sem::Exit],
        text: vec!["ENTRY".into(), "EXIT".into()],
        vert: HashMap::new(),
        stmt_of: vec![None, None],
    };
    let mut tr = Tr { mode, t, locs: HashMap::new(), pending: Vec::new(), labels: HashMap::new(), loops: Vec::new() };
    let first = tr.seq(prog, Tgt::V(ProgramGraph::EXIT));
    tr.pending.push((ProgramGraph::ENTRY, Label::TRUE, first, false));
    for (v, l, tgt, dummy) in std::mem::take(&mut tr.pending) {
        let to = tr.resolve(tgt);
        tr.t.g.add_arc(v, l, to, dummy);
    }
    tr.t.g.validate().expect("translation yields a well-formed graph");
    tr.t
}

// ---------------------------------------------------------------- execution

fn eval(e: &Expr, env: &HashMap<String, i64>) -> i64 {
    match e {
        Expr::Const(k) => *k,
        Expr::Var(x) => env.get(x).copied().unwrap_or(0),
        Expr::Not(a) => i64::from(eval(a, env) == 0),
        Expr::Bin(op, a, b) => {
            let (a, b) = (eval(a, env), eval(b, env));
            match op {
                '+' => a.wrapping_add(b),
                '-' => a.wrapping_sub(b),
                '*' => a.wrapping_mul(b),
                '%' => {
                    if b == 0 {
                        0
                    } else {
                        a.wrapping_rem(b)
                    }
                }
                '<' => i64::from(a < b),
                '>' => i64::from(a > b),
                '=' => i64::from(a == b),
                _ => unreachable!("operator {op}"),
            }
        }
    }
}

/// Runs a CFG from ENTRY on `input` (variables not given start at 0), following `succ(v, label)`, for at most
/// `fuel` steps. Returns each vertex's value sequence (assigned value, output value, predicate outcome as 0/1,
/// 1 for a jump, 0 for an opaque statement), or `None` if the run did not reach EXIT.
pub(crate) fn run(
    t: &Translated,
    input: &[(&str, i64)],
    succ: &dyn Fn(StmtId, Label) -> Option<StmtId>,
    fuel: usize,
) -> Option<Vec<Vec<i64>>> {
    let mut env: HashMap<String, i64> = input.iter().map(|&(x, k)| (x.to_string(), k)).collect();
    let mut values = vec![Vec::new(); t.sem.len()];
    let mut v = ProgramGraph::ENTRY;
    for _ in 0..fuel {
        let label = match &t.sem[v.index()] {
            Sem::Exit => return Some(values),
            Sem::Entry => Label::TRUE,
            Sem::Assign(x, e) => {
                let k = eval(e, &env);
                env.insert(x.clone(), k);
                values[v.index()].push(k);
                Label::TRUE
            }
            Sem::Output(e) => {
                values[v.index()].push(eval(e, &env));
                Label::TRUE
            }
            Sem::Opaque => {
                values[v.index()].push(0);
                Label::TRUE
            }
            Sem::Pred(e) => {
                let b = eval(e, &env) != 0;
                values[v.index()].push(i64::from(b));
                if b {
                    Label::TRUE
                } else {
                    Label::FALSE
                }
            }
            Sem::Jump => {
                values[v.index()].push(1);
                Label::TRUE
            }
        };
        v = succ(v, label).expect("every executed label has a successor");
    }
    None
}

/// The successor function of the full CFG.
pub(crate) fn cfg_succ(g: &ProgramGraph) -> impl Fn(StmtId, Label) -> Option<StmtId> + '_ {
    let map: HashMap<(StmtId, Label), StmtId> = g.arcs().iter().map(|a| ((a.from, a.label), a.to)).collect();
    move |v, l| map.get(&(v, l)).copied()
}

// ---------------------------------------------------------------- projection (Fig. 6.2)

fn labels_in(s: &Stmt, out: &mut Vec<Stmt>) {
    match &s.kind {
        Kind::Label(_) => out.push(s.clone()),
        Kind::If(_, a, b) => a.iter().chain(b).for_each(|x| labels_in(x, out)),
        Kind::While(_, b) | Kind::Repeat(b, _) => b.iter().for_each(|x| labels_in(x, out)),
        _ => {}
    }
}

fn eliminate_stmts(seq: &[Stmt], keep: &dyn Fn(usize) -> bool) -> Vec<Stmt> {
    let mut out = Vec::new();
    for s in seq {
        if matches!(s.kind, Kind::Label(_)) {
            out.push(s.clone());
        } else if !keep(s.id) {
            labels_in(s, &mut out);
        } else {
            let kind = match &s.kind {
                Kind::If(e, a, b) => Kind::If(e.clone(), eliminate_stmts(a, keep), eliminate_stmts(b, keep)),
                Kind::While(e, b) => Kind::While(e.clone(), eliminate_stmts(b, keep)),
                Kind::Repeat(b, e) => Kind::Repeat(eliminate_stmts(b, keep), e.clone()),
                k => k.clone(),
            };
            out.push(Stmt { id: s.id, kind });
        }
    }
    out
}

fn gotos(seq: &[Stmt], out: &mut Vec<String>) {
    for s in seq {
        match &s.kind {
            Kind::Goto(l) => out.push(l.clone()),
            Kind::If(_, a, b) => {
                gotos(a, out);
                gotos(b, out);
            }
            Kind::While(_, b) | Kind::Repeat(b, _) => gotos(b, out),
            _ => {}
        }
    }
}

fn drop_labels(seq: Vec<Stmt>, used: &[String]) -> Vec<Stmt> {
    seq.into_iter()
        .filter(|s| !matches!(&s.kind, Kind::Label(l) if !used.contains(l)))
        .map(|s| {
            let kind = match s.kind {
                Kind::If(e, a, b) => Kind::If(e, drop_labels(a, used), drop_labels(b, used)),
                Kind::While(e, b) => Kind::While(e, drop_labels(b, used)),
                Kind::Repeat(b, e) => Kind::Repeat(drop_labels(b, used), e),
                k => k,
            };
            Stmt { id: s.id, kind }
        })
        .collect()
}

/// Step 2 of Slice(P, c): every statement whose vertex is not kept is replaced by the labels it contains (Fig.
/// 6.2), then labels no remaining goto targets are dropped. Statements without a vertex (jumps under the
/// standard translation) count as not kept — the Ottensteins' projection.
pub(crate) fn project(prog: &[Stmt], t: &Translated, kept: &dyn Fn(StmtId) -> bool) -> Vec<Stmt> {
    let keep = |id: usize| t.vert.get(&id).is_some_and(|&v| kept(v));
    let p = eliminate_stmts(prog, &keep);
    let mut used = Vec::new();
    gotos(&p, &mut used);
    drop_labels(p, &used)
}
