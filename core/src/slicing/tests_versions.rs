//! Whole-unit differencing ([`super::versions`]): the correspondence by line and key, and changes carried across
//! calls and initial memory. Programs are the toy language's; each statement is one source line, and the expected
//! sets are derived by hand from the module docs' rules.

use super::diff::Behaviour;
use super::lang::{parse, translate, Translation};
use super::program::StmtId;
use super::versions::{
    correspond, diff_program, FunctionDiff, FunctionStatements, GlobalState, LineMap, ModuleStatements, Stmt,
};

/// `src` as function `name`, its `k`-th statement on line `first_line + k`; `extra` adds facts per statement text.
fn function(name: &str, src: &str, first_line: u32, extra: &dyn Fn(&str, &mut Stmt)) -> FunctionStatements {
    let t = translate(&parse(src), Translation::Augmented);
    let stmts = t
        .text
        .iter()
        .enumerate()
        .map(|(v, text)| {
            let mut s = Stmt {
                file: Some(0),
                line: t.stmt_of[v].map_or(0, |k| first_line + k as u32),
                col: 1,
                key: text.clone(),
                ..Default::default()
            };
            extra(text, &mut s);
            s
        })
        .collect();
    FunctionStatements { name: name.into(), display_name: String::new(), error: None, graph: t.g, stmts }
}

fn unit(functions: Vec<FunctionStatements>, globals: Vec<GlobalState>) -> ModuleStatements {
    ModuleStatements { source: "u.c".into(), files: vec!["u.c".into()], globals, functions }
}

/// NEW line `l` is OLD line `map(l)`, for lines 1..=200 of u.c.
fn lines(map: impl Fn(u32) -> Option<u32>) -> LineMap {
    let mut m = LineMap::default();
    m.files.insert("u.c".into(), ("u.c".into(), (1..=200).map(map).collect()));
    m
}

fn none(_: &str, _: &mut Stmt) {}

/// The texts of `f`'s vertices with behaviour `b`, sorted.
fn with(new: &ModuleStatements, d: &[(String, FunctionDiff)], f: &str, b: Behaviour) -> Vec<String> {
    let k = new.functions.iter().position(|x| x.name == f).unwrap();
    let FunctionDiff::Compared(bs) = &d[k].1 else { panic!("{f} not compared: {:?}", d[k].1) };
    let mut out: Vec<String> =
        (2..bs.len()).filter(|&v| bs[v] == b).map(|v| new.functions[k].stmts[v].key.clone()).collect();
    out.sort();
    out
}

/// A statement inserted above shifts every line: the line map keeps the correspondence, and only the new
/// statement (used nowhere) differs.
#[test]
fn an_inserted_line_changes_only_itself() {
    let old = unit(vec![function("f", "a:=1; b:=a+1; output(b)", 10, &none)], vec![]);
    let new = unit(vec![function("f", "z:=5; a:=1; b:=a+1; output(b)", 10, &none)], vec![]);
    let d = diff_program(&old, &new, &lines(|l| (l > 10).then(|| l - 1))).unwrap();
    assert_eq!(with(&new, &d.functions, "f", Behaviour::Changed), ["z:=5"]);
    assert!(with(&new, &d.functions, "f", Behaviour::Affected).is_empty());
}

/// Without the line map's shift, nothing corresponds: every statement is changed (precision, not soundness).
#[test]
fn without_corresponding_lines_everything_is_changed() {
    let old = unit(vec![function("f", "a:=1; output(a)", 10, &none)], vec![]);
    let new = unit(vec![function("f", "a:=1; output(a)", 20, &none)], vec![]);
    let d = diff_program(&old, &new, &lines(|_| None)).unwrap();
    assert_eq!(with(&new, &d.functions, "f", Behaviour::Changed), ["a:=1", "output(a)"]);
}

/// Same key and line, operands swapped (say `SUB(a,b)` whose macro became `(b)-(a)`): the pair is dropped.
#[test]
fn swapped_vertex_operands_break_the_correspondence() {
    let src = "a:=1; b:=2; c:=a+b; output(c)";
    let version = |swap: bool| {
        let mut f = function("f", src, 1, &none);
        let at = |text: &str| StmtId::from_index(f.stmts.iter().position(|s| s.key == text).unwrap());
        let ids = [at("a:=1"), at("b:=2"), at("c:=a+b"), at("output(c)")];
        let [a, b, c, _] = ids;
        f.stmts[c.index()].operands = if swap { vec![Some(b), Some(a)] } else { vec![Some(a), Some(b)] };
        (unit(vec![f], vec![]), ids)
    };
    let ((old, ids), (new, _)) = (version(false), version(true));
    let corr = correspond(&old, &old.functions[0], &new, &new.functions[0], &lines(Some));
    let [a, b, c, out] = ids;
    assert_eq!(corr[c.index()], None, "c has no correspondent");
    assert_eq!((corr[a.index()], corr[b.index()], corr[out.index()]), (Some(a), Some(b), Some(out)));
    let d = diff_program(&old, &new, &lines(Some)).unwrap();
    assert_eq!(with(&new, &d.functions, "f", Behaviour::Changed), ["c:=a+b"]);
    assert_eq!(with(&new, &d.functions, "f", Behaviour::Affected), ["output(c)"]);
    let (same, _) = version(false);
    let d = diff_program(&old, &same, &lines(Some)).unwrap();
    assert!(with(&same, &d.functions, "f", Behaviour::Changed).is_empty());
}

/// h changes; g calls h, f calls g, k calls nothing: the change reaches g's and f's call statements (and what
/// depends on them), not k. The fixed point needs two rounds past h.
#[test]
fn a_changed_callee_changes_its_callers_transitively() {
    let calls = |text: &str, s: &mut Stmt| {
        s.callees = match text {
            "a:=hcall" => vec!["h".into()],
            "b:=gcall" => vec!["g".into()],
            _ => vec![],
        }
    };
    let version = |h: &str| {
        unit(
            vec![
                function("f", "b:=gcall; output(b)", 1, &calls),
                function("g", "a:=hcall; output(a)", 11, &calls),
                function("h", h, 21, &calls),
                function("k", "q:=7; output(q)", 31, &calls),
            ],
            vec![],
        )
    };
    let (old, new) = (version("r:=1; output(r)"), version("r:=2; output(r)"));
    let mut m = LineMap::default();
    // The edited line 21 (r:=1 → r:=2) has no OLD counterpart.
    m.files.insert("u.c".into(), ("u.c".into(), (1..=200).map(|l| (l != 21).then_some(l)).collect()));
    let d = diff_program(&old, &new, &m).unwrap();
    assert_eq!(with(&new, &d.functions, "h", Behaviour::Changed), ["r:=2"]);
    assert_eq!(with(&new, &d.functions, "h", Behaviour::Affected), ["output(r)"]);
    // The calls were not edited: they are affected, like what depends on them.
    assert!(with(&new, &d.functions, "g", Behaviour::Changed).is_empty());
    assert_eq!(with(&new, &d.functions, "g", Behaviour::Affected), ["a:=hcall", "output(a)"]);
    assert_eq!(with(&new, &d.functions, "f", Behaviour::Affected), ["b:=gcall", "output(b)"]);
    assert!(with(&new, &d.functions, "k", Behaviour::Changed).is_empty());
    assert!(with(&new, &d.functions, "k", Behaviour::Affected).is_empty());
}

/// A changed initialiser: vertices naming the global differ; if its address is taken, so does every vertex
/// that reads memory through a pointer, and nothing else.
#[test]
fn a_changed_initial_value_reaches_its_readers() {
    let facts = |text: &str, s: &mut Stmt| {
        if text == "x:=G" {
            s.globals = vec!["G".into()];
            s.reads_memory = true;
        }
        if text == "y:=P" {
            s.reads_memory = true;
        }
    };
    let src = "x:=G; y:=P; z:=3; output(x); output(y); output(z)";
    let global = |init: &str, taken: bool| GlobalState { name: "G".into(), init: init.into(), address_taken: taken };
    for taken in [false, true] {
        let old = unit(vec![function("f", src, 1, &facts)], vec![global("i32 1", taken)]);
        let new = unit(vec![function("f", src, 1, &facts)], vec![global("i32 2", taken)]);
        let d = diff_program(&old, &new, &lines(Some)).unwrap();
        let changed = with(&new, &d.functions, "f", Behaviour::Affected);
        assert!(with(&new, &d.functions, "f", Behaviour::Changed).is_empty(), "nothing of f was edited");
        if taken {
            assert_eq!(changed, ["output(x)", "output(y)", "x:=G", "y:=P"]);
            assert_eq!(d.changed_memory, ["G"]);
        } else {
            assert_eq!(changed, ["output(x)", "x:=G"]);
            assert!(d.changed_memory.is_empty());
        }
        let unchanged = unit(vec![function("f", src, 1, &facts)], vec![global("i32 1", taken)]);
        let d = diff_program(&old, &unchanged, &lines(Some)).unwrap();
        assert!(with(&unchanged, &d.functions, "f", Behaviour::Affected).is_empty());
    }
}

/// New and removed functions, and a function one version could not graph.
#[test]
fn new_removed_and_uncompared_functions_are_reported() {
    let old = unit(vec![function("f", "a:=1", 1, &none), function("gone", "b:=1", 11, &none)], vec![]);
    let mut broken = function("f", "a:=1", 1, &none);
    broken.error = Some("calls setjmp".into());
    let new = unit(vec![broken, function("fresh", "c:=1", 21, &none)], vec![]);
    let d = diff_program(&old, &new, &lines(Some)).unwrap();
    assert_eq!(d.functions[0].1, FunctionDiff::NotCompared("calls setjmp".into()));
    assert_eq!(d.functions[1].1, FunctionDiff::New);
    assert_eq!(d.removed, ["gone"]);
}

/// The graphs travel as JSON between the pass and the CLI: a round trip is the identity.
#[test]
fn module_statements_round_trip_through_json() {
    let m = unit(vec![function("f", "if P then goto L fi; x:=1; L: y:=x", 1, &none)], vec![]);
    let text = serde_json::to_string(&m).unwrap();
    let back: ModuleStatements = serde_json::from_str(&text).unwrap();
    assert_eq!(back, m);
}

/// A statement list that does not match its graph (a corrupt file) is reported, not indexed past its end.
#[test]
fn a_statement_list_of_the_wrong_length_is_not_compared() {
    let old = unit(vec![function("f", "a:=1; output(a)", 1, &none)], vec![]);
    let mut new = old.clone();
    new.functions[0].stmts.pop();
    let d = diff_program(&old, &new, &lines(Some)).unwrap();
    assert_eq!(d.functions[0].1, FunctionDiff::NotCompared("malformed statement graph".into()));
}
