//! The lcov tracefile of `pathprof coverage --lcov OUT`, as `geninfo(1)` documents it: per source file a record
//! `TN:` / `SF:file` / `FN:line,name` / `FNDA:count,name` / `FNF` / `FNH` / `BRDA:line,block,branch,taken` /
//! `BRF` / `BRH` / `DA:line,count` / `LF` / `LH` / `end_of_record`.
//!
//! Only functions whose counts are exact and whose file is known are written. A line's count is the sum over
//! the functions carrying it of each one's count for it (the largest count of its blocks carrying the line), so
//! a header line in functions of two modules adds up. `BRDA` blocks are numbered per file in order of
//! appearance; `taken` is `-` when the branching block never ran, as gcov writes it.

use super::FunctionCoverage;
use crate::sources::{self, SourceRoot};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The tracefile text for `functions` (files in name order, functions in the given order); each file is named
/// where [`sources::locate`] finds it (through `roots`), so genhtml can read it.
pub(super) fn tracefile(functions: &[FunctionCoverage], roots: &[SourceRoot]) -> String {
    let mut by_file: BTreeMap<&str, Vec<&FunctionCoverage>> = BTreeMap::new();
    for f in functions.iter().filter(|f| f.exact && !f.file.is_empty()) {
        by_file.entry(f.file).or_default().push(f);
    }
    let dirs = sources::ModuleDirs::new(functions.iter().map(|f| (f.module, f.file))).with_compilation_dirs(
        functions.iter().flat_map(|f| f.compilation_dirs.iter().map(|d| (f.module, d.as_str()))),
    );
    let mut out = String::new();
    for (file, fs) in by_file {
        let file = sources::locate(file, fs.iter().map(|f| f.module), &dirs, roots).display().to_string();
        write_file(&mut out, &file, &fs);
    }
    out
}

fn write_file(out: &mut String, file: &str, functions: &[&FunctionCoverage]) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "TN:\nSF:{file}");
    // Functions by name in order of appearance; a name seen twice (two modules' copies) adds up.
    let mut names: Vec<(&str, u32, u64)> = Vec::new();
    for f in functions {
        let entered = f.entry_count.unwrap_or(0);
        match names.iter_mut().find(|(n, _, _)| *n == f.name) {
            Some(slot) => slot.2 = slot.2.saturating_add(entered),
            None => names.push((f.name, f.start_line, entered)),
        }
    }
    for (name, line, _) in &names {
        let _ = writeln!(out, "FN:{line},{name}");
    }
    for (name, _, count) in &names {
        let _ = writeln!(out, "FNDA:{count},{name}");
    }
    let _ = writeln!(out, "FNF:{}\nFNH:{}", names.len(), names.iter().filter(|n| n.2 > 0).count());

    let (mut found, mut hit, mut block_id) = (0usize, 0usize, 0usize);
    for f in functions {
        let mut last_block = None;
        for b in &f.branch_counts {
            let Some(line) = b.line else { continue };
            if last_block != Some(b.block) {
                last_block = Some(b.block);
                block_id += 1;
            }
            let taken = if b.block_count == 0 { "-".to_string() } else { b.count.to_string() };
            let _ = writeln!(out, "BRDA:{line},{},{},{taken}", block_id - 1, b.succ);
            found += 1;
            hit += usize::from(b.count > 0);
        }
    }
    let _ = writeln!(out, "BRF:{found}\nBRH:{hit}");

    let mut lines: BTreeMap<u32, u64> = BTreeMap::new();
    for f in functions {
        for l in &f.line_counts {
            let slot = lines.entry(l.line).or_insert(0);
            *slot = slot.saturating_add(l.count);
        }
    }
    for (line, count) in &lines {
        let _ = writeln!(out, "DA:{line},{count}");
    }
    let _ = writeln!(out, "LF:{}\nLH:{}\nend_of_record", lines.len(), lines.values().filter(|&&c| c > 0).count());
}

#[cfg(test)]
mod tests {
    use super::super::{BranchCount, LineCount};
    use super::*;

    fn function<'a>(
        name: &'a str,
        file: &'a str,
        entry: u64,
        lines: &[(u32, u64)],
        exact: bool,
    ) -> FunctionCoverage<'a> {
        FunctionCoverage {
            name,
            display_name: name,
            module: "m.c",
            compilation_dirs: &[],
            mode: "edge",
            file,
            start_line: lines.first().map_or(0, |l| l.0),
            entry_count: Some(entry),
            exact,
            inexact_reasons: Vec::new(),
            paths: None,
            lines: None,
            branches: None,
            line_counts: lines.iter().map(|&(line, count)| LineCount { line, count }).collect(),
            branch_counts: Vec::new(),
            uncovered_lines: Vec::new(),
        }
    }

    #[test]
    fn one_record_per_file_with_lines_summed_over_functions() {
        let mut f = function("f", "a.c", 3, &[(1, 3), (2, 0), (4, 3)], true);
        let branch =
            |block, succ, count, block_count| BranchCount { block, line: Some(1), succ, to: 0, count, block_count };
        f.branch_counts = vec![branch(0, 0, 3, 3), branch(0, 1, 0, 3), branch(2, 0, 0, 0), branch(2, 1, 0, 0)];
        let fs = [
            f,
            function("g", "b.c", 0, &[(7, 0)], true),
            function("h", "a.c", 2, &[(4, 2), (9, 2)], true),
            function("bad", "a.c", 9, &[(1, 9)], false),
            function("nofile", "", 9, &[(1, 9)], true),
        ];
        let want = "TN:\nSF:a.c\nFN:1,f\nFN:4,h\nFNDA:3,f\nFNDA:2,h\nFNF:2\nFNH:2\n\
                    BRDA:1,0,0,3\nBRDA:1,0,1,0\nBRDA:1,1,0,-\nBRDA:1,1,1,-\nBRF:4\nBRH:1\n\
                    DA:1,3\nDA:2,0\nDA:4,5\nDA:9,2\nLF:4\nLH:3\nend_of_record\n\
                    TN:\nSF:b.c\nFN:7,g\nFNDA:0,g\nFNF:1\nFNH:0\nBRF:0\nBRH:0\nDA:7,0\nLF:1\nLH:0\nend_of_record\n";
        assert_eq!(tracefile(&fs, &[]), want);
        let src = [sources::parse_source_root("/src").unwrap()];
        let rooted = tracefile(&fs[..2], &src);
        assert!(rooted.contains("SF:/src/a.c\n") && rooted.contains("SF:/src/b.c\n"), "{rooted}");
        let mut absolute = function("f", "/abs/a.c", 1, &[(1, 1)], true);
        absolute.module = "m";
        assert!(tracefile(&[absolute], &src).contains("SF:/abs/a.c\n"));
        // A module named by its absolute source path reveals the compilation directory of a relative name.
        let mut revealed = function("f", "lib/x.c", 1, &[(1, 1)], true);
        revealed.module = "/build/proj/lib/x.c";
        assert!(tracefile(&[revealed], &[]).contains("SF:/build/proj/lib/x.c\n"));
    }
}
