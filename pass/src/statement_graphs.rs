//! Statement graphs for differencing (`PATHPROF_STATEMENT_GRAPHS=OUT.json`, issue #22): instead of
//! instrumenting, the pass writes every defined function's slicing graph ([`crate::slice_graph`]) with what
//! `pathprof diff-program` needs to match each vertex to its counterpart in another version
//! ([`pathprof_core::slicing::versions`]): source position, a key (opcode, type, and every operand that is not a
//! vertex — constants, globals, arguments — as text), vertex operands by position, the unit's functions a call
//! may reach, and the globals' initial values. The module itself is left unchanged.
//!
//! Private constant globals (string literals, `.str.N`) are keyed by their contents, not their numbered names, so
//! adding a string literal somewhere does not change every later one.

use crate::config::Config;
use crate::ir;
use crate::slice_graph::{FunctionGraph, ModuleSummaries, HEAP};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::debuginfo::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMLinkage, LLVMOpcode};
use pathprof_core::slicing::versions::{FunctionStatements, GlobalState, ModuleStatements, Stmt};
use pathprof_core::slicing::{ProgramGraph, StmtId};
use std::collections::{BTreeSet, HashMap};

/// Writes `m`'s statement graphs to the configured file; the module does not change.
pub fn write(m: LLVMModuleRef, config: &Config) -> Result<bool, String> {
    let out = config.statement_graphs.as_deref().expect("statement-graph mode has an output");
    let unit = statements(m);
    let text = serde_json::to_string(&unit).map_err(|e| format!("internal: {e}"))?;
    std::fs::write(out, text).map_err(|e| format!("cannot write {out}: {e}"))?;
    Ok(false)
}

/// The unit's statement graphs.
pub fn statements(m: LLVMModuleRef) -> ModuleStatements {
    let summaries = ModuleSummaries::of(m);
    let defined: Vec<LLVMValueRef> = ir::functions(m).into_iter().filter(|&f| !ir::is_declaration(f)).collect();
    let address_taken_functions: Vec<String> =
        defined.iter().filter(|&&f| address_taken(f)).map(|&f| ir::name(f)).collect();
    let mut keys = Keys { files: Vec::new(), file_index: HashMap::new(), defined: defined.iter().copied().collect() };
    let mut functions = Vec::new();
    for &f in &defined {
        let name = ir::name(f);
        let display_name = crate::shim::subprogram_name(f);
        match FunctionGraph::build(f, &summaries, name != "main", None, true) {
            Err(e) => functions.push(FunctionStatements {
                name,
                display_name,
                error: Some(e),
                graph: ProgramGraph::new(),
                stmts: Vec::new(),
            }),
            Ok(fg) => {
                let stmts = (0..fg.inst.len())
                    .map(|k| match k {
                        0 | 1 => Stmt { key: ["ENTRY", "EXIT"][k].into(), ..Stmt::default() },
                        _ => keys.stmt(&fg, StmtId::from_index(k), &address_taken_functions),
                    })
                    .collect();
                functions.push(FunctionStatements { name, display_name, error: None, graph: fg.g, stmts });
            }
        }
    }
    let globals = ir::globals(m)
        .into_iter()
        .filter(|&g| unsafe { LLVMIsDeclaration(g) } == 0 && !is_literal(g))
        .map(|g| GlobalState {
            name: ir::name(g),
            init: format!("{}{}", type_text(unsafe { LLVMGlobalGetValueType(g) }), {
                let init = unsafe { LLVMGetInitializer(g) };
                if init.is_null() {
                    String::new()
                } else {
                    keys.constant(init, &mut Vec::new())
                }
            }),
            address_taken: address_taken(g),
        })
        .collect();
    ModuleStatements { source: ir::module_source_name(m), files: keys.files, globals, functions }
}

/// Builds the keys, with the file-name table.
struct Keys {
    files: Vec<String>,
    file_index: HashMap<LLVMMetadataRef, u32>,
    defined: BTreeSet<LLVMValueRef>,
}

impl Keys {
    fn stmt(&mut self, fg: &FunctionGraph, v: StmtId, address_taken_functions: &[String]) -> Stmt {
        let i = fg.inst[v.index()];
        let op = ir::opcode(i);
        let mut key = format!("{op:?} {}", type_text(unsafe { LLVMTypeOf(i) }));
        match op {
            LLVMOpcode::LLVMICmp => key += &format!(" {:?}", unsafe { LLVMGetICmpPredicate(i) }),
            LLVMOpcode::LLVMFCmp => key += &format!(" {:?}", unsafe { LLVMGetFCmpPredicate(i) }),
            LLVMOpcode::LLVMAlloca => {
                let var = crate::shim::declared_variable(i).unwrap_or_else(|| ir::name(i));
                key += &format!(" {} {var}", type_text(unsafe { LLVMGetAllocatedType(i) }));
            }
            LLVMOpcode::LLVMGetElementPtr => {
                key += &format!(" {}", type_text(unsafe { LLVMGetGEPSourceElementType(i) }))
            }
            _ => {}
        }
        let mut stmt = Stmt::default();
        let n = unsafe { LLVMGetNumOperands(i) }.max(0) as u32;
        for k in 0..n {
            let o = unsafe { LLVMGetOperand(i, k) };
            if o.is_null() {
                key += " null";
                stmt.operands.push(None);
            } else if unsafe { !LLVMIsAInstruction(o).is_null() } {
                match fg.vertex.get(&o) {
                    Some(&w) => {
                        key += " %";
                        stmt.operands.push(Some(w));
                    }
                    None => {
                        key += " %unreachable";
                        stmt.operands.push(None);
                    }
                }
            } else {
                key += " ";
                key += &self.constant(o, &mut stmt.globals);
                stmt.operands.push(None);
            }
        }
        if op == LLVMOpcode::LLVMCall || op == LLVMOpcode::LLVMInvoke {
            match ir::called_function(i) {
                Some(f) if self.defined.contains(&f) => stmt.callees.push(ir::name(f)),
                Some(_) => {}
                None if ir::calls_inline_asm(i) => {}
                None => stmt.callees.extend(address_taken_functions.iter().cloned()),
            }
        }
        if op == LLVMOpcode::LLVMPHI {
            // Incoming blocks, by their terminators: the operand check compares them like operands.
            for k in 0..unsafe { LLVMCountIncoming(i) } {
                let bb = unsafe { LLVMGetIncomingBlock(i, k) };
                stmt.operands.push(ir::terminator(bb).and_then(|t| fg.vertex.get(&t).copied()));
            }
        }
        stmt.reads_memory = fg.g.vertex(v).uses.contains(&HEAP);
        stmt.globals.sort();
        stmt.globals.dedup();
        let (file, line, col) = self.position(i);
        Stmt { file, line, col, key, ..stmt }
    }

    /// A non-instruction operand as text; names the unit's globals it refers to in `globals`.
    fn constant(&mut self, c: LLVMValueRef, globals: &mut Vec<String>) -> String {
        unsafe {
            if LLVMValueIsBasicBlock(c) != 0 {
                return "label".into();
            }
            if !LLVMIsAArgument(c).is_null() {
                let f = LLVMGetParamParent(c);
                let k = (0..LLVMCountParams(f)).find(|&k| LLVMGetParam(f, k) == c).unwrap_or(u32::MAX);
                return format!("%arg{k}");
            }
            if !LLVMIsAFunction(c).is_null() {
                return format!("@{}", ir::name(c));
            }
            if !LLVMIsAGlobalVariable(c).is_null() {
                if is_literal(c) {
                    let init = LLVMGetInitializer(c);
                    let text = if init.is_null() { String::new() } else { self.constant(init, globals) };
                    return format!("@literal({text})");
                }
                let name = ir::name(c);
                globals.push(name.clone());
                return format!("@{name}");
            }
            if !LLVMIsAGlobalValue(c).is_null() {
                return format!("@{}", ir::name(c));
            }
            if !LLVMIsAConstantExpr(c).is_null() {
                let parts: Vec<String> = (0..LLVMGetNumOperands(c).max(0) as u32)
                    .map(|k| self.constant(LLVMGetOperand(c, k), globals))
                    .collect();
                return format!("({:?} {} {})", LLVMGetConstOpcode(c), type_text(LLVMTypeOf(c)), parts.join(" "));
            }
            if LLVMGetValueKind(c) == inkwell::llvm_sys::LLVMValueKind::LLVMMetadataAsValueValueKind {
                return "metadata".into();
            }
            // Aggregates may name other globals: walk their elements instead of trusting the printed names.
            if !LLVMIsAConstantStruct(c).is_null() || !LLVMIsAConstantArray(c).is_null() {
                let parts: Vec<String> = (0..LLVMGetNumOperands(c).max(0) as u32)
                    .map(|k| self.constant(LLVMGetOperand(c, k), globals))
                    .collect();
                return format!("{{{} {}}}", type_text(LLVMTypeOf(c)), parts.join(", "));
            }
            let p = LLVMPrintValueToString(c);
            let text = ir::c_str(p);
            LLVMDisposeMessage(p);
            text
        }
    }

    /// File index, line and column of `i`'s debug location.
    fn position(&mut self, i: LLVMValueRef) -> (Option<u32>, u32, u32) {
        unsafe {
            let loc = LLVMInstructionGetDebugLoc(i);
            if loc.is_null() || LLVMDILocationGetLine(loc) == 0 {
                return (None, 0, 0);
            }
            let file = LLVMDIScopeGetFile(LLVMDILocationGetScope(loc));
            if file.is_null() {
                return (None, 0, 0);
            }
            let next = self.files.len() as u32;
            let index = *self.file_index.entry(file).or_insert(next);
            if index == next {
                let mut dir_len = 0u32;
                let mut len = 0u32;
                let name = ir::owned_string(LLVMDIFileGetFilename(file, &mut len), len as usize);
                let dir = ir::owned_string(LLVMDIFileGetDirectory(file, &mut dir_len), dir_len as usize);
                let path = if name.starts_with('/') || dir.is_empty() { name } else { format!("{dir}/{name}") };
                self.files.push(path);
            }
            (Some(index), LLVMDILocationGetLine(loc), LLVMDILocationGetColumn(loc))
        }
    }
}

/// A private or internal constant global with an unnamed address: a literal, known by its contents.
fn is_literal(g: LLVMValueRef) -> bool {
    unsafe {
        LLVMIsGlobalConstant(g) != 0
            && LLVMGetUnnamedAddress(g) != inkwell::llvm_sys::LLVMUnnamedAddr::LLVMNoUnnamedAddr
            && matches!(LLVMGetLinkage(g), LLVMLinkage::LLVMPrivateLinkage | LLVMLinkage::LLVMInternalLinkage)
    }
}

/// Whether some use of `g` is not a direct call or the address of a load or store: a pointer may reach it.
fn address_taken(g: LLVMValueRef) -> bool {
    unsafe {
        let mut u = LLVMGetFirstUse(g);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            let direct = !LLVMIsAInstruction(user).is_null()
                && match ir::opcode(user) {
                    LLVMOpcode::LLVMLoad => LLVMGetOperand(user, 0) == g,
                    LLVMOpcode::LLVMStore => LLVMGetOperand(user, 1) == g && LLVMGetOperand(user, 0) != g,
                    LLVMOpcode::LLVMCall => ir::called_function(user) == Some(g) && !call_passes(user, g),
                    _ => false,
                };
            if !direct {
                return true;
            }
            u = LLVMGetNextUse(u);
        }
        false
    }
}

/// Whether `g` is among `call`'s arguments (not only its callee).
fn call_passes(call: LLVMValueRef, g: LLVMValueRef) -> bool {
    unsafe { (0..LLVMGetNumArgOperands(call)).any(|k| LLVMGetOperand(call, k) == g) }
}

fn type_text(t: LLVMTypeRef) -> String {
    unsafe {
        let p = LLVMPrintTypeToString(t);
        let s = ir::c_str(p);
        LLVMDisposeMessage(p);
        s
    }
}
