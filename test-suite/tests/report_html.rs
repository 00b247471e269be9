//! `pathprof report --html` and `pathprof show --dot` end to end: real programs compiled through `dist/`, counts
//! and paths derived by hand (report_paths.c's comment, two_tu_*.c's markers), the HTML pages read as text and
//! loaded in a real browser (headless Chromium from Debian's `chromium` package: it opens the page from
//! `file://`, chooses a path through the `#path=NAME:ID` fragment, and the test reads back which rows the page's
//! JS highlighted), and the dot output rendered by Graphviz (Debian's `graphviz`). Both packages are installed
//! by scripts/setup.sh; a missing one fails the test.

use pathprof_test_suite::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Compiles `sources` at -O0 with -g in `mode` (plus `flags`), runs the program; returns the profile. Path mode
/// without loop resets (`PATHPROF_LOOP_RESETS=0`): the hand-derived path executions below are Ball and Larus's.
fn profile(name: &str, sources: &[&str], mode: &str, flags: &[&str]) -> InScratch {
    let dir = scratch(name);
    let exe = dir.join("prog");
    let srcs: Vec<PathBuf> = sources.iter().map(|s| programs().join(s)).collect();
    run_ok(
        wrapper(false)
            .args(["-O0", "-g"])
            .args(flags)
            .args(&srcs)
            .arg("-o")
            .arg(&exe)
            .env("PATHPROF_MODE", mode)
            .env("PATHPROF_LOOP_RESETS", "0"),
    );
    let prof = dir.join("out.pathprof");
    run_ok(Command::new(&exe).env("PATHPROF_FILE", &prof));
    dir.hold(prof)
}

fn pathprof() -> Command {
    Command::new(dist().join("bin/pathprof"))
}

/// `pathprof report --html -o DIR PROFILE ARGS...` run in the profile's directory (must succeed); returns DIR and
/// the output. The sources were compiled from test-suite/ and named `programs/NAME` (as debug info records them,
/// relative to the compilation directory); the report finds them through their modules' absolute names, or
/// through `--source-root`.
fn report(prof: &Path, args: &[&str]) -> (PathBuf, Output) {
    let dir = prof.with_file_name("site");
    let cwd = prof.parent().unwrap();
    let out = run_ok(pathprof().args(["report", "--html", "-o"]).arg(&dir).arg(prof).args(args).current_dir(cwd));
    (dir, out)
}

/// The page of source file `name` in a report.
fn page(site: &Path, name: &str) -> PathBuf {
    let suffix = format!("-{name}.html");
    let found: Vec<PathBuf> = std::fs::read_dir(site)
        .expect("read site")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(&suffix)))
        .collect();
    assert_eq!(found.len(), 1, "one page for {name} in {}: {found:?}", site.display());
    found[0].clone()
}

/// The listing rows of a page (static or as the browser left it): line → (class, count cell).
fn rows(html: &str) -> BTreeMap<u32, (String, String)> {
    let mut out = BTreeMap::new();
    for part in html.split("<tr id=\"L").skip(1) {
        let line: u32 = part[..part.find('"').unwrap()].parse().expect("line number");
        let class = part.split("class=\"").nth(1).and_then(|c| c.split('"').next()).unwrap_or("").to_string();
        let count =
            part.split("<td class=\"count\">").nth(1).and_then(|c| c.split('<').next()).unwrap_or("").to_string();
        out.insert(line, (class, count));
    }
    out
}

/// Lines of rows whose class includes `class`.
fn rows_with(html: &str, class: &str) -> BTreeSet<u32> {
    rows(html).into_iter().filter(|(_, (c, _))| c.split(' ').any(|w| w == class)).map(|(l, _)| l).collect()
}

/// The id of the one executed path of `function` whose count is `count` (`pathprof decode --json`): the test
/// programs give each path of interest a count of its own, derived by hand.
fn path_with_count(prof: &Path, function: &str, count: i64) -> String {
    let out = run_ok(pathprof().args(["decode", "--json", "--function", function]).arg(prof));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("decode --json");
    let ids: Vec<String> = json["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .filter(|p| p["count"].as_i64() == Some(count))
        .map(|p| p["id"].to_string())
        .collect();
    assert_eq!(ids.len(), 1, "one path of {function} with count {count}: {ids:?}");
    ids[0].clone()
}

/// Headless Chromium with `args` on `url` (a `file://` page); panics with instructions when it is missing.
fn chromium(args: &[&str], url: &str) -> Output {
    let mut cmd = Command::new("chromium");
    cmd.args(["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
        .args(args)
        .arg(url);
    match cmd.output() {
        Ok(out) => {
            assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
            out
        }
        Err(e) => panic!("cannot run chromium ({e}): scripts/setup.sh installs it (Debian package chromium)"),
    }
}

/// The DOM of `page#fragment` after its scripts ran.
fn browser_dom(page: &Path, fragment: &str) -> String {
    let out = chromium(&["--dump-dom"], &format!("file://{}#{fragment}", page.display()));
    String::from_utf8(out.stdout).expect("DOM is UTF-8")
}

/// A screenshot of `page#fragment`, kept under the cargo target directory; returns its path.
fn screenshot(page: &Path, fragment: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_html");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = dir.join(name);
    let _ = std::fs::remove_file(&png);
    chromium(
        &["--window-size=1400,800", &format!("--screenshot={}", png.display())],
        &format!("file://{}#{fragment}", page.display()),
    );
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000, "{} is not a screenshot", png.display());
    println!("screenshot: {}", png.display());
    png
}

fn set(lines: &[u32]) -> BTreeSet<u32> {
    lines.iter().copied().collect()
}

/// Every `expect:` marker of report_paths.c is the line's count on its page, in every mode; the `for` line shows
/// its hottest part (the condition: 11 evaluations); the index ranks functions by executions.
#[test]
fn html_line_counts_are_the_hand_derived_counts_in_every_mode() {
    let src = programs().join("report_paths.c");
    for mode in ["path", "edge", "block", "context", "piecewise"] {
        let prof = profile(&format!("html-counts-{mode}"), &["report_paths.c"], mode, &[]);
        let (site, out) = report(&prof, &[]);
        assert!(out.stderr.is_empty(), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        let html = std::fs::read_to_string(page(&site, "report_paths.c")).unwrap();
        let rows = rows(&html);
        for (line, (_, want)) in expectations(&src) {
            assert_eq!(rows[&line].1, want.to_string(), "{mode}: report_paths.c:{line}");
        }
        assert_eq!(rows[&20].1, "11", "{mode}: the for line counts its condition");
        // Lines no block carries: the comment, the declaration line, `else`, the closing braces.
        for line in [1, 7, 11, 16, 24] {
            assert_eq!(rows[&line].1, "", "{mode}: line {line} has no count");
        }
        // Source text is escaped.
        assert!(html.contains("#include &lt;stdio.h&gt;"), "{mode}");
        // Index order. Path modes: main's 11 path executions (BL: entry to the first back edge, 9 loop
        // iterations, the last header to the exit; context/piecewise: the paths starting in main, with classify's
        // calls inside them) before classify's 10 (path) or 0 (no path starts in classify). Edge and block modes:
        // block executions, classify's 10+7+3+10+5+10 = 45 before main's 1+11+10+10+1 = 33.
        let index = std::fs::read_to_string(site.join("index.html")).unwrap();
        let (main, classify) = (index.find(">main</a>").unwrap(), index.find(">classify</a>").unwrap());
        if mode == "edge" || mode == "block" {
            assert!(classify < main, "{mode}: classify (45) ranks first");
            assert!(index.contains("<td class=\"num\" title=\"block executions\">45</td>"), "{mode}");
        } else {
            assert!(main < classify, "{mode}: main (11) ranks first");
            assert!(index.contains("<td class=\"num\" title=\"path executions\">11</td>"), "{mode}");
        }
    }
}

/// Chromium opens the path-mode report from file://, chooses classify's paths by their hand-derived counts, and
/// exactly the lines of each path's statements are highlighted.
#[test]
fn chromium_highlights_exactly_the_chosen_paths_lines() {
    let prof = profile("html-browser", &["report_paths.c"], "path", &[]);
    let (site, _) = report(&prof, &[]);
    let page = page(&site, "report_paths.c");
    // count → the lines of its statements: `int r = 0;` (8) and `if (x < 7)` (9) always, then `r += 1;` (10)
    // or `r += 10;` (12), `if (x % 2 == 0)` (13), `r += 100;` (14) for even x, `return r;` (15).
    let cases: [(i64, &[u32]); 4] = [
        (4, &[8, 9, 10, 13, 14, 15]),
        (3, &[8, 9, 10, 13, 15]),
        (1, &[8, 9, 12, 13, 14, 15]),
        (2, &[8, 9, 12, 13, 15]),
    ];
    for (count, lines) in cases {
        let id = path_with_count(&prof, "classify", count);
        let dom = browser_dom(&page, &format!("path=classify:{id}"));
        assert!(dom.contains(&format!("data-selected=\"classify:{id}\"")), "count {count}: path {id} not chosen");
        assert_eq!(rows_with(&dom, "hl"), set(lines), "count {count}: path {id}");
        assert!(rows_with(&dom, "ctx").is_empty());
        // The static page highlights nothing: the browser did.
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(rows_with(&html, "hl").is_empty());
    }
    let id = path_with_count(&prof, "classify", 3);
    screenshot(&page, &format!("path=classify:{id}"), "report_paths-classify.png");
}

/// A context profile of two translation units linked with --pathprof-lto: one module, so a path runs from main
/// (two_tu_main.c) through square and clamp (two_tu_util.c). On main's page the path's lines there are
/// highlighted, its context (main's entry block) is marked, and its steps link to the other file's page, where
/// choosing the same path highlights the util lines.
#[test]
fn context_paths_link_and_highlight_across_files() {
    let prof = profile("html-lto", &["two_tu_main.c", "two_tu_util.c"], "context", &["--pathprof-lto"]);
    // The module is named after the executable: the relative names debug info recorded need a root.
    let root = format!("programs={}", programs().display());
    let (site, out) = report(&prof, &["--source-root", &root]);
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let main_page = page(&site, "two_tu_main.c");
    let util_page = page(&site, "two_tu_util.c");
    // 63 iterations (i in [-31, 31]) call clamp with x <= 1000 and return x: one context path, starting at main's
    // loop header after its back edge, with the entry block (lines 6-7) as its calling context.
    let id = path_with_count(&prof, "clamp", 63);
    let dom = browser_dom(&main_page, &format!("path=main:{id}"));
    assert_eq!(rows_with(&dom, "hl"), set(&[7, 8]), "main's loop condition/increment and body");
    assert_eq!(rows_with(&dom, "ctx"), set(&[6]), "the context: int s = 0; (line 7 is active too)");
    let util_name = util_page.file_name().unwrap().to_str().unwrap();
    assert!(dom.contains(&format!("href=\"{util_name}#L2\"")), "main's steps link square's line in util");
    // square (line 2), clamp's two tests (4, 6), `return x;` (8) and clamp's closing brace (9): with three
    // return statements clang -O0 stores the value and jumps to one return block, located at the `}`.
    let dom = browser_dom(&util_page, &format!("path=clamp:{id}"));
    assert_eq!(rows_with(&dom, "hl"), set(&[2, 4, 6, 8, 9]));
    let main_name = main_page.file_name().unwrap().to_str().unwrap();
    assert!(dom.contains(&format!("href=\"{main_name}#L8\"")), "util's steps link back to main");
    screenshot(&util_page, &format!("path=clamp:{id}"), "two_tu-clamp.png");
}

/// Sources are read through --source-root; one that cannot be found is listed on the index and in one stderr
/// line, and the report is still written.
#[test]
fn sources_are_remapped_and_missing_ones_listed() {
    let prof = profile("html-roots", &["report_paths.c"], "path", &[]);
    let moved = prof.with_file_name("moved");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::copy(programs().join("report_paths.c"), moved.join("report_paths.c")).unwrap();
    let root = format!("{}={}", programs().display(), moved.display());
    let (site, out) = report(&prof, &["--source-root", &root]);
    assert!(out.stderr.is_empty());
    let html = std::fs::read_to_string(page(&site, "report_paths.c")).unwrap();
    assert!(html.contains(&format!("Read from {}", moved.join("report_paths.c").display())));
    assert_eq!(rows(&html)[&10].1, "7");

    let root = format!("{}={}", programs().display(), prof.with_file_name("nowhere").display());
    let (site, out) = report(&prof, &["--source-root", &root]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("1 source file not found") && err.contains("report_paths.c"), "{err}");
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains("Sources not found (1)"));
    let html = std::fs::read_to_string(page(&site, "report_paths.c")).unwrap();
    assert!(html.contains("Source not found") && rows(&html).is_empty());
    assert!(html.contains("data-fn=\"classify\""), "the functions and their paths are still shown");
}

/// Nodes of a dot graph: id → its lines (`EXIT` → empty), from the `lines A-B` of its label.
fn dot_nodes(dot: &str) -> BTreeMap<String, BTreeSet<u32>> {
    let mut out = BTreeMap::new();
    for l in dot.lines().map(str::trim).filter(|l| l.starts_with("bb") && !l.contains("->")) {
        let id = l.split_whitespace().next().unwrap().to_string();
        let label = l.split("label=\"").nth(1).unwrap();
        let lines = label.split("\\nlines ").nth(1).map_or("", |r| r.split("\\n").next().unwrap());
        let mut set = BTreeSet::new();
        for part in lines.split(',').filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            set.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap());
        }
        out.insert(id, set);
    }
    out.insert("EXIT".to_string(), BTreeSet::new());
    out
}

/// Edges of a dot graph as (from lines, to lines, label, highlighted).
fn dot_edges(dot: &str) -> Vec<(BTreeSet<u32>, BTreeSet<u32>, String, bool)> {
    let nodes = dot_nodes(dot);
    dot.lines()
        .map(str::trim)
        .filter(|l| l.contains(" -> "))
        .map(|l| {
            let mut w = l.split_whitespace();
            let (from, _, to) = (w.next().unwrap(), w.next(), w.next().unwrap());
            let label = l.split("label=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
            (nodes[from].clone(), nodes[to].clone(), label, l.contains("class=\"path\""))
        })
        .collect()
}

/// `show --dot` of classify: edge counts by hand (x < 7 for 7 of x = 0..9, even for 5), exactly the chosen path's
/// edges highlighted, valid for Graphviz; unknown functions and a missing Graphviz are one-line errors.
#[test]
fn dot_graph_counts_and_highlighted_path() {
    let prof = profile("dot-path", &["report_paths.c"], "path", &[]);
    let id = path_with_count(&prof, "classify", 3);
    let out = run_ok(pathprof().args(["show", "--dot", "--function", "classify", "--path", &id]).arg(&prof));
    let dot = String::from_utf8(out.stdout).unwrap();
    let edges = dot_edges(&dot);
    let label = |from: &[u32], to: &[u32]| {
        let e: Vec<_> = edges.iter().filter(|e| e.0 == set(from) && e.1 == set(to)).collect();
        assert_eq!(e.len(), 1, "one edge {from:?} -> {to:?} in\n{dot}");
        e[0].2.clone()
    };
    assert_eq!(label(&[8, 9], &[10]), "7");
    assert_eq!(label(&[8, 9], &[12]), "3");
    assert_eq!(label(&[13], &[14]), "5");
    assert_eq!(label(&[13], &[15]), "5");
    assert_eq!(label(&[15], &[]), "10");
    // The x < 7, odd path (count 3): 8-9 -> 10 -> 13 -> 15 -> EXIT, and nothing else.
    let chosen: BTreeSet<(BTreeSet<u32>, BTreeSet<u32>)> =
        edges.iter().filter(|e| e.3).map(|e| (e.0.clone(), e.1.clone())).collect();
    let want: BTreeSet<(BTreeSet<u32>, BTreeSet<u32>)> =
        [(set(&[8, 9]), set(&[10])), (set(&[10]), set(&[13])), (set(&[13]), set(&[15])), (set(&[15]), set(&[]))]
            .into_iter()
            .collect();
    assert_eq!(chosen, want);

    // Graphviz reads it, and the SVG keeps the path's class on exactly those four edges.
    let svg = prof.with_file_name("classify.svg");
    run_ok(pathprof().args(["show", "--dot", "--function", "classify", "--path", &id, "-o"]).arg(&svg).arg(&prof));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg"));
    assert_eq!(text.matches("class=\"edge path\"").count(), 4);
    let dot_file = prof.with_file_name("classify.dot");
    std::fs::write(&dot_file, &dot).unwrap();
    run_ok(Command::new("dot").arg("-Tsvg").arg(&dot_file));

    // Errors: one line, exit 2.
    let one_line_error = |out: Output, what: &str| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.starts_with("pathprof: error: "), "{what}: {err}");
        err.to_string()
    };
    let err = one_line_error(
        pathprof().args(["show", "--dot", "--function", "nope"]).arg(&prof).output().unwrap(),
        "unknown",
    );
    assert!(err.contains("no function named nope"));
    let no_graphviz = prof.with_file_name("empty-bin");
    std::fs::create_dir_all(&no_graphviz).unwrap();
    let out = pathprof()
        .args(["show", "--dot", "--function", "classify", "-o"])
        .arg(prof.with_file_name("x.svg"))
        .arg(&prof)
        .env("PATH", &no_graphviz)
        .output()
        .unwrap();
    assert!(one_line_error(out, "no graphviz").contains("Graphviz"));
    let err = one_line_error(
        pathprof().args(["show", "--dot", "--function", "classify", "--path", "4"]).arg(&prof).output().unwrap(),
        "path out of range",
    );
    assert!(err.contains("4 paths"), "{err}");
}

/// Edge mode: measured edges (counters, on chords) are dashed and the counts are the same; a path cannot be
/// chosen.
#[test]
fn dot_graph_of_an_edge_profile() {
    let prof = profile("dot-edge", &["report_paths.c"], "edge", &[]);
    let out = run_ok(pathprof().args(["show", "--dot", "--function", "classify"]).arg(&prof));
    let dot = String::from_utf8(out.stdout).unwrap();
    let edges = dot_edges(&dot);
    let find = |from: &[u32], to: &[u32]| edges.iter().find(|e| e.0 == set(from) && e.1 == set(to)).unwrap().2.clone();
    assert_eq!(find(&[8, 9], &[10]), "7");
    assert_eq!(find(&[13], &[14]), "5");
    // Edge mode counts E - V + 1 chords of the graph with EXIT and its EXIT->entry edge (8 drawn edges + 1,
    // 6 blocks + EXIT): 3 counters; the EXIT->entry edge is not drawn, so 2 or 3 dashed edges.
    let dashed = dot.lines().filter(|l| l.contains(" -> ") && l.contains("dashed")).count();
    assert!((2..=3).contains(&dashed), "{dot}");
    let out = pathprof().args(["show", "--dot", "--function", "classify", "--path", "0"]).arg(&prof).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
