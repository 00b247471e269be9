//! Executable slicing (`PATHPROF_SLICE=FILE:LINE[:VAR]`, issue #22): instead of instrumenting, the pass replaces
//! every function holding an instruction of line FILE:LINE by its backward slice on those instructions (Ball's
//! thesis ch. 6: [`pathprof_core::slicing::Pdg::slice`] on the graph of [`crate::slice_graph`], rewritten by
//! [`crate::slice_rewrite`]); other functions stay whole (calls are summarised). It acts at the pipeline start, on
//! unoptimised IR with clang's debug locations (`pathprof-clang` adds `-gline-tables-only` unless `-g` is given;
//! `VAR` needs `-g`).
//!
//! The criterion: every instruction of the line except jumps (`br` without condition, `unreachable`) — the jumps
//! when the line has nothing else (`return;`, `break;`); with `VAR`, only the line's loads and stores of that
//! variable plus its calls. A function other than `main` returns to code
//! that runs on, so its `ret`s read all memory and its calls that may not return are criteria too: later
//! activations then see the same memory and control.
//!
//! With `PATHPROF_SLICE_PROFILE` the graphs hold only what a profile shows executed ([`crate::slice_profile`]: a
//! dynamic slice); with `PATHPROF_SLICE_OBSERVE` the criterion's values are reported ([`crate::slice_observe`]).
//!
//! The slice is first built and verified on a clone of the module; the module itself changes only if that
//! succeeds, and any failure is one line (a failed compile).

use crate::cfg_build::CallFacts;
use crate::config::{Config, ObserveIn, SliceCriterion};
use crate::identity;
use crate::ir;
use crate::slice_graph::{is_ignored, FunctionGraph, ModuleSummaries};
use crate::slice_profile::ProfileRuns;
use crate::slice_rewrite;
use inkwell::llvm_sys::analysis::{LLVMVerifierFailureAction, LLVMVerifyModule};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::debuginfo::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use pathprof_core::slicing::{Pdg, StmtId};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Source lines per file (the JSON's `slice`).
type Lines = BTreeMap<String, BTreeSet<u32>>;

/// Slices `m` per `config.slice`; writes `config.slice_json`. Returns whether the module changed.
pub fn slice_module(m: LLVMModuleRef, config: &Config) -> Result<bool, String> {
    let crit = config.slice.as_ref().expect("slice mode has a criterion");
    let clone = unsafe { LLVMCloneModule(m) };
    let trial = slice_all(clone, config, false).and_then(|_| verify(clone));
    unsafe { LLVMDisposeModule(clone) };
    trial?;
    let lines = slice_all(m, config, config.stats)?;
    if let Some(out) = &config.slice_json {
        std::fs::write(out, json(crit, &lines)).map_err(|e| format!("cannot write {out}: {e}"))?;
    }
    Ok(true)
}

fn verify(m: LLVMModuleRef) -> Result<(), String> {
    let mut msg = std::ptr::null_mut();
    let broken = unsafe { LLVMVerifyModule(m, LLVMVerifierFailureAction::LLVMReturnStatusAction, &mut msg) };
    let text = ir::c_str(msg);
    if !msg.is_null() {
        unsafe { LLVMDisposeMessage(msg) };
    }
    if broken != 0 {
        let first = text.lines().next().unwrap_or("invalid IR");
        return Err(format!("the sliced module does not verify ({first}); module left unchanged"));
    }
    Ok(())
}

/// Slices every function with an instruction at the criterion's line; returns the slice's lines.
fn slice_all(m: LLVMModuleRef, config: &Config, stats: bool) -> Result<Lines, String> {
    let crit = config.slice.as_ref().expect("slice mode has a criterion");
    let (observe, profile) = (config.slice_observe, config.slice_profile.as_deref());
    let mut files = FileNames::default();
    let defined: Vec<LLVMValueRef> = ir::functions(m).into_iter().filter(|&f| !ir::is_declaration(f)).collect();
    let targets: Vec<LLVMValueRef> = defined
        .iter()
        .copied()
        .filter(|&f| ir::blocks(f).into_iter().flat_map(ir::instructions).any(|i| files.at(i, crit)))
        .collect();
    if targets.is_empty() {
        return Err(format!(
            "no instruction at {} in this compile (a blank line, another file, or no debug info)",
            crit.location()
        ));
    }
    let summaries = ModuleSummaries::of(m);
    let runs = profile.map(ProfileRuns::load).transpose()?;
    let me = identity::of_module(&ir::module_source_name(m), config);
    let facts = runs.as_ref().map(|_| CallFacts::new(m));
    let mut lines = Lines::new();
    let mut sliced = 0;
    for f in targets {
        let started = std::time::Instant::now();
        let is_main = ir::name(f) == "main";
        let executed = match (&runs, &facts) {
            (Some(r), Some(facts)) => Some(r.executed(f, &me, facts)?),
            _ => None,
        };
        let fg = FunctionGraph::build(f, &summaries, !is_main, executed.as_ref(), false)
            .map_err(|e| format!("{}: {e}", ir::name(f)))?;
        let (criteria, at_line) = criteria(&fg, &mut files, crit, is_main)?;
        if at_line.is_empty() {
            continue;
        }
        sliced += 1;
        if observe == Some(ObserveIn::Whole) {
            crate::slice_observe::observe(f, &at_line);
            continue;
        }
        let pdg = Pdg::build(&fg.g).map_err(|e| format!("internal: {e}"))?;
        let slice = pdg.slice(&criteria);
        let kept: Vec<LLVMValueRef> = slice.kept().filter(|v| v.index() >= 2).map(|v| fg.inst[v.index()]).collect();
        let plan = slice_rewrite::plan(&fg, &slice, executed.is_some()).map_err(|e| format!("{}: {e}", ir::name(f)))?;
        let mut whole = Lines::new();
        for &i in &fg.inst[2..] {
            files.add_line(&mut whole, i);
        }
        for &i in &kept {
            files.add_line(&mut lines, i);
        }
        slice_rewrite::apply(f, &plan).map_err(|e| format!("{}: {e}", ir::name(f)))?;
        if observe == Some(ObserveIn::Slice) {
            crate::slice_observe::observe(f, &at_line);
        }
        if stats {
            let count = |l: &Lines| l.values().map(BTreeSet::len).sum::<usize>();
            eprintln!(
                "pathprof: slice: function={} instructions={} kept={} lines={} of {} time_ms={:.2}",
                ir::name(f),
                fg.inst.len() - 2,
                kept.len(),
                count(&lines),
                count(&whole),
                started.elapsed().as_secs_f64() * 1e3
            );
        }
    }
    if sliced == 0 && runs.is_some() {
        return Err(format!("the profile shows no execution of {}", crit.location()));
    }
    if sliced == 0 {
        return Err(format!("the instructions at {} can never run (unreachable code)", crit.location()));
    }
    Ok(lines)
}

/// The criterion's vertices in `fg`, and the instructions among them that are at the line (none: the line's
/// instructions in `fg` are all unreachable).
fn criteria(
    fg: &FunctionGraph,
    files: &mut FileNames,
    crit: &SliceCriterion,
    is_main: bool,
) -> Result<(Vec<StmtId>, Vec<LLVMValueRef>), String> {
    let mut out = Vec::new();
    let mut at_line = Vec::new();
    let mut var_seen = false;
    for (k, &i) in fg.inst.iter().enumerate().skip(2) {
        let v = StmtId::from_index(k);
        let op = ir::opcode(i);
        let here = files.at(i, crit) && !is_ignored(i);
        let jump = op == LLVMOpcode::LLVMUnreachable || (op == LLVMOpcode::LLVMBr && ir::successors(i).len() == 1);
        let wanted = match &crit.var {
            _ if jump => false,
            None => here,
            Some(var) => {
                let access = fg.accessed_alloca.get(&i).and_then(|&a| crate::shim::declared_variable(a));
                let hit = here && access.as_deref() == Some(var.as_str());
                var_seen |= hit;
                hit || (here && op == LLVMOpcode::LLVMCall)
            }
        };
        let exit_effect = !is_main && (op == LLVMOpcode::LLVMRet || fg.calls.get(&v).is_some_and(|s| s.may_not_return));
        if wanted {
            at_line.push(i);
        }
        if wanted || exit_effect {
            out.push(v);
        }
    }
    // A line with only a jump (`return;`, `break;`, `goto L;`): the jump is the criterion — the slice reaches it
    // whenever the program does (a jump is a vertex like any other, thesis §6.1.1).
    if at_line.is_empty() && crit.var.is_none() {
        for (k, &i) in fg.inst.iter().enumerate().skip(2) {
            if files.at(i, crit) && !is_ignored(i) {
                at_line.push(i);
                out.push(StmtId::from_index(k));
            }
        }
    }
    if let Some(var) = &crit.var {
        if !var_seen {
            return Err(format!("no load or store of variable '{var}' at {} (variables need -g)", crit.location()));
        }
    }
    Ok((out, at_line))
}

/// `{"criterion":"FILE:LINE","slice":[{"file":S,"lines":[N…]}]}`.
fn json(crit: &SliceCriterion, lines: &Lines) -> String {
    let files: Vec<String> = lines
        .iter()
        .map(|(file, ls)| {
            let ls: Vec<String> = ls.iter().map(u32::to_string).collect();
            format!("{{\"file\":{},\"lines\":[{}]}}", quote(file), ls.join(","))
        })
        .collect();
    format!("{{\"criterion\":{},\"slice\":[{}]}}\n", quote(&crit.location()), files.join(","))
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// File names of debug locations, cached per DIFile.
#[derive(Default)]
struct FileNames {
    names: HashMap<LLVMMetadataRef, String>,
}

impl FileNames {
    /// The file and line of `inst`'s debug location (line 0: none).
    fn location(&mut self, inst: LLVMValueRef) -> Option<(String, u32)> {
        unsafe {
            let loc = LLVMInstructionGetDebugLoc(inst);
            if loc.is_null() || LLVMDILocationGetLine(loc) == 0 {
                return None;
            }
            let file = LLVMDIScopeGetFile(LLVMDILocationGetScope(loc));
            if file.is_null() {
                return None;
            }
            let name = self.names.entry(file).or_insert_with(|| {
                let mut len = 0u32;
                let p = LLVMDIFileGetFilename(file, &mut len);
                if p.is_null() {
                    return String::new();
                }
                String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len as usize)).into_owned()
            });
            Some((name.clone(), LLVMDILocationGetLine(loc)))
        }
    }

    /// Whether `inst` is at the criterion's line: same line, and the file is FILE or ends in `/FILE`.
    fn at(&mut self, inst: LLVMValueRef, crit: &SliceCriterion) -> bool {
        self.location(inst).is_some_and(|(file, line)| line == crit.line && same_file(&file, &crit.file))
    }

    fn add_line(&mut self, lines: &mut Lines, inst: LLVMValueRef) {
        if let Some((file, line)) = self.location(inst) {
            lines.entry(file).or_default().insert(line);
        }
    }
}

/// `FILE` names `debug_file` if equal or a trailing path of it (`a.c` names `src/a.c`, and so does `./src/a.c`).
fn same_file(debug_file: &str, file: &str) -> bool {
    let (d, f) = (debug_file.trim_start_matches("./"), file.trim_start_matches("./"));
    d == f || d.ends_with(&format!("/{f}")) || f.ends_with(&format!("/{d}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_match_by_trailing_path() {
        assert!(same_file("/w/src/a.c", "a.c"));
        assert!(same_file("/w/src/a.c", "src/a.c"));
        assert!(same_file("./a.c", "a.c"));
        assert!(same_file("a.c", "/w/a.c"));
        assert!(!same_file("/w/src/ba.c", "a.c"));
        assert!(!same_file("/w/src/a.c", "b.c"));
    }

    #[test]
    fn json_is_the_documented_shape() {
        let crit = SliceCriterion { file: "a.c".into(), line: 9, var: None };
        let mut lines = Lines::new();
        lines.entry("/x/a\"b.c".into()).or_default().extend([9, 3, 5]);
        assert_eq!(
            json(&crit, &lines),
            "{\"criterion\":\"a.c:9\",\"slice\":[{\"file\":\"/x/a\\\"b.c\",\"lines\":[3,5,9]}]}\n"
        );
    }
}
