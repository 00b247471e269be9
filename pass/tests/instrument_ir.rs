//! Runs the pass's Rust side on hand-written IR (no clang): the instrumented module must verify, have the
//! optimal number of counters, and handle the IR shapes that need special placement.

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::values::{AnyValue, AsValueRef};
use pathprof::config::Config;
use pathprof::module;
use pathprof_format::meta::ModuleMeta;

/// `mode`, optionally `+nochecks` (no fork re-entry checks) and `+values|dispatch|tree` (PATHPROF_IP_PLACEMENT).
fn config(mode: &str) -> Config {
    let mut parts = mode.split('+');
    let mode = parts.next().expect("a mode");
    let options: Vec<&str> = parts.collect();
    let checks = !options.contains(&"nochecks");
    let placement = options.iter().copied().find(|o| ["values", "dispatch", "tree"].contains(o));
    Config::from_lookup(|k| match k {
        "PATHPROF_WEIGHTS" => Some("uniform".into()),
        "PATHPROF_MODE" => Some(mode.into()),
        "PATHPROF_FORK_CHECKS" => Some(if checks { "1".into() } else { "0".into() }),
        "PATHPROF_IP_PLACEMENT" => placement.map(String::from),
        _ => None,
    })
    .unwrap()
}

/// The module `ir` describes.
fn parse<'c>(ctx: &'c Context, ir: &str) -> inkwell::module::Module<'c> {
    let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test");
    ctx.create_module_from_ir(buf).expect("test IR parses")
}

/// Instruments `ir` in edge mode, verifies the result, and returns (IR text, decoded metadata).
fn instrument(ir: &str) -> (String, ModuleMeta) {
    instrument_in(ir, "edge")
}

/// Instruments `ir` in `mode`, verifies the result (also in path mode), and returns (IR text, metadata).
fn instrument_in(ir: &str, mode: &str) -> (String, ModuleMeta) {
    if mode == "edge" {
        // Every edge-mode test IR must also instrument cleanly in path mode.
        instrument_in(ir, "path");
    }
    let ctx = Context::create();
    let m = parse(&ctx, ir);
    let changed = module::instrument(m.as_mut_ptr(), std::ptr::null_mut(), &config(mode)).expect("instrument");
    assert!(changed);
    if let Err(e) = m.verify() {
        panic!("instrumented IR does not verify: {}\n{}", e.to_string(), m.print_to_string().to_string());
    }
    let text = m.print_to_string().to_string();
    let meta_global = m.get_global("__pathprof_meta").expect("metadata global");
    let init = meta_global.get_initializer().expect("initializer").into_array_value();
    let bytes = init.as_const_string().expect("byte string").to_vec();
    (text, ModuleMeta::decode(&bytes).expect("metadata decodes"))
}

fn optimum(meta: &ModuleMeta) -> (usize, usize) {
    if meta.mode != pathprof_format::meta::Mode::Edge {
        return (0, 0);
    }
    let placed: usize = meta.functions.iter().map(|f| f.num_counters as usize).sum();
    let opt: usize = meta.functions.iter().map(|f| f.cfg.num_edges() + 1 - f.cfg.num_vertices()).sum();
    (placed, opt)
}

#[test]
fn switch_with_parallel_edges_gets_split_counters() {
    let (text, meta) = instrument(
        r#"
define i32 @f(i32 %x) {
entry:
  switch i32 %x, label %d [ i32 0, label %a
                            i32 3, label %a
                            i32 1, label %b ]
a:
  %p = phi i32 [ 1, %entry ], [ 1, %entry ]
  br label %d
b:
  br label %d
d:
  %r = phi i32 [ 0, %entry ], [ %p, %a ], [ 2, %b ]
  ret i32 %r
}
"#,
    );
    let f = &meta.functions[0];
    // 4 blocks + EXIT; edges: 4 switch, a->d, b->d, d->EXIT, EXIT->entry = 8; optimum 8 - 5 + 1 = 4.
    assert_eq!(f.cfg.num_edges(), 8);
    assert_eq!(optimum(&meta), (4, 4));
    assert!(text.contains("__pathprof_register_module"));
}

#[test]
fn calls_that_may_not_return_get_termination_edges() {
    let (_, meta) = instrument(
        r#"
declare void @may_exit()
declare void @safe() nounwind willreturn
define void @g(i1 %c) {
entry:
  call void @safe()
  br i1 %c, label %t, label %e
t:
  call void @may_exit()
  br label %e
e:
  ret void
}
"#,
    );
    let f = &meta.functions[0];
    let terminations: Vec<_> =
        f.cfg.edges().iter().filter(|e| e.kind == pathprof_core::EdgeKind::Termination).map(|e| e.from.0).collect();
    assert_eq!(terminations, vec![1], "only block t calls something that may not return");
    assert_eq!(optimum(&meta).0, optimum(&meta).1);
}

#[test]
fn shared_landing_pad_is_counted_through_a_phi() {
    let (text, meta) = instrument(
        r#"
declare void @may_throw(i32)
declare i32 @__gxx_personality_v0(...)
define void @h() personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw(i32 1) to label %n1 unwind label %lp
n1:
  invoke void @may_throw(i32 2) to label %n2 unwind label %lp
n2:
  ret void
lp:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}
"#,
    );
    assert_eq!(optimum(&meta).0, optimum(&meta).1);
    // Both invoke blocks may also leave by exit()/longjmp: their termination edges and both unwind edges
    // cannot all be tree edges, so at least one unwind edge is counted through a PHI in the landing pad.
    assert!(text.contains("pathprof.edge"), "expected a PHI-selected counter:\n{text}");
}

#[test]
fn musttail_return_is_never_separated_from_its_call() {
    let (_, meta) = instrument(
        r#"
declare i32 @callee(i32, i1)
define i32 @t(i32 %x, i1 %c) {
entry:
  br i1 %c, label %a, label %b
a:
  %r = musttail call i32 @callee(i32 %x, i1 %c)
  ret i32 %r
b:
  ret i32 0
}
"#,
    );
    assert_eq!(optimum(&meta).0, optimum(&meta).1);
}

#[test]
fn self_loop_and_unreachable_block() {
    let (_, meta) = instrument(
        r#"
define void @l(i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %n
  br i1 %c, label %loop, label %out
out:
  ret void
dead:
  br label %out
}
"#,
    );
    let f = &meta.functions[0];
    // The block unreachable from entry is still connected (dead -> out): counters = |E| - |V| + 1 = 2.
    assert_eq!(f.num_counters, 2);
    assert_eq!(f.num_counters as usize, f.cfg.num_edges() + 1 - f.cfg.num_vertices());
}

/// Fork re-entry checks go around the calls that may fork and return: a call of `fork`, through a function
/// pointer, of an unknown function, or of a module function that may do one of those; not around calls of
/// fork-free module functions (here one that may `longjmp`, so it still gets a termination edge), of the
/// library functions known not to fork, or of `noreturn` ones. The same in every mode.
#[test]
fn fork_checks_go_around_calls_that_may_fork_and_return() {
    let ir = r#"
declare i32 @fork()
declare i64 @strlen(ptr)
declare void @longjmp(ptr, i32) noreturn
declare void @unknown()
define internal void @errs(ptr %p, i1 %c) {
entry:
  %n = call i64 @strlen(ptr %p)
  br i1 %c, label %die, label %ok
die:
  call void @longjmp(ptr %p, i32 1)
  unreachable
ok:
  ret void
}
define internal void @forks() {
  %r = call i32 @fork()
  ret void
}
define void @f(ptr %p, ptr %fp) {
entry:
  call void @errs(ptr %p, i1 false)
  call void @forks()
  call void %fp()
  call void @unknown()
  ret void
}
"#;
    for mode in ["edge", "path", "context", "piecewise"] {
        let (text, meta) = instrument_in(ir, mode);
        assert!(meta.fork_reentries, "{mode}");
        let checks = |name: &str| {
            let body = text.split("define ").find(|d| d.contains(&format!("@{name}("))).unwrap();
            let body = &body[..body.find("\n}\n").unwrap()];
            body.matches("call void @__pathprof_fork_reentry_here").count()
        };
        assert_eq!((checks("errs"), checks("forks"), checks("f")), (0, 1, 3), "{mode}:\n{text}");
        // A check is a load of the generation before the call and a compare after it.
        assert!(text.contains("load i64, ptr @__pathprof_fork_gen"), "{mode}");
        // errs may leave by longjmp: it still has a termination edge (its calls are counted as in flight).
        let f = meta.functions.iter().find(|f| f.name == "f").unwrap();
        assert!(f.cfg.edges().iter().any(|e| e.kind == pathprof_core::EdgeKind::Termination), "{mode}");
        // PATHPROF_FORK_CHECKS=0: none, and the metadata says so.
        let (text, meta) = instrument_in(ir, &format!("{mode}+nochecks"));
        assert!(!meta.fork_reentries, "{mode}");
        assert!(!text.contains("load i64, ptr @__pathprof_fork_gen"), "{mode}");
    }
}

/// A cleanup landing pad that calls a function which may fork (and may not return) and then resumes, reached
/// from two invokes, in a function with a 34-predecessor dispatch join: as optimised C++ has it (jsoncpp under
/// --pathprof-lto). Context and piecewise modes end the path there once per arrival, so the arrival is counted
/// before the call — counted at the `resume`, an arrival whose call does not return was lost, and the fork
/// re-entry check of the call recorded a path key computed after it ("Instruction does not dominate all uses";
/// with the spanning-tree placements the key is an `add` no later pass removes). Every placement.
#[test]
fn cleanup_pad_that_calls_and_resumes_counts_before_the_call() {
    let cases: String = (0..34).map(|i| format!(" i32 {i}, label %c{i}\n")).collect();
    let case_blocks: String = (0..34).map(|i| format!("c{i}:\n  br label %join\n")).collect();
    let ir = format!(
        r#"
declare void @may_throw(i32)
declare void @cleanup()
declare i32 @__gxx_personality_v0(...)
define void @d(i32 %op, i32 %n) personality ptr @__gxx_personality_v0 {{
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %next ]
  %sel = add i32 %op, %i
  switch i32 %sel, label %join [
{cases}  ]
{case_blocks}join:
  %odd = and i32 %i, 1
  %c = icmp eq i32 %odd, 0
  br i1 %c, label %first, label %second
first:
  invoke void @may_throw(i32 1) to label %next unwind label %lp
second:
  invoke void @may_throw(i32 2) to label %next unwind label %lp
next:
  %i1 = add i32 %i, 1
  %more = icmp slt i32 %i1, %n
  br i1 %more, label %loop, label %out
out:
  ret void
lp:
  %l = landingpad {{ ptr, i32 }} cleanup
  call void @cleanup()
  resume {{ ptr, i32 }} %l
}}
"#
    );
    for mode in ["context", "piecewise"] {
        let mut texts = Vec::new();
        for placement in ["values", "dispatch", "tree"] {
            // instrument_in verifies the module.
            let (text, _) = instrument_in(&ir, &format!("{mode}+{placement}"));
            texts.push(text.clone());
            let pad = &text[text.find("landingpad").expect("the landing pad")..];
            let call = pad.find("call void @cleanup()").expect("the cleanup call");
            assert!(
                pad[..call].contains("@__pathprof_counters"),
                "{mode} {placement}: the arrival is not counted before the cleanup call:\n{pad}"
            );
            assert!(!pad[call..pad.find("resume").unwrap()].contains("@__pathprof_counters"), "{mode} {placement}");
        }
        // The join makes @d a dispatch function: `dispatch` places its values on the tree's chords, as `tree` does.
        assert_ne!(texts[0], texts[1], "{mode}: dispatch placed nothing differently");
        assert_eq!(texts[1], texts[2], "{mode}");
    }
}

/// Promotion after inlining meets counter updates the optimiser reshaped. The SLP vectoriser merges the flushes
/// of neighbouring counters into one `<2 x i64>` update, which a later peephole point (whole-program builds)
/// finds in a loop: it stays in memory (taking it for one counter built `add i64 %slot, <2 x i64>`, invalid IR
/// that crashed the link of jansson's tests); the plain `i64` update of another counter in the same loop is
/// still promoted, flushed at the exit.
#[test]
fn promotion_after_inlining_leaves_vector_updates_in_memory() {
    let ir = r#"
@__pathprof_counters = internal global [4 x i64] zeroinitializer, align 8

define void @f(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %v = load <2 x i64>, ptr @__pathprof_counters, align 8
  %a = add <2 x i64> %v, <i64 1, i64 1>
  store <2 x i64> %a, ptr @__pathprof_counters, align 8
  %c = load volatile i64, ptr getelementptr inbounds ([4 x i64], ptr @__pathprof_counters, i64 0, i64 2), align 8
  %d = add i64 %c, 1
  store volatile i64 %d, ptr getelementptr inbounds ([4 x i64], ptr @__pathprof_counters, i64 0, i64 2), align 8
  %i1 = add i64 %i, 1
  %e = icmp eq i64 %i1, %n
  br i1 %e, label %exit, label %loop
exit:
  ret void
}
"#;
    let ctx = Context::create();
    let m = parse(&ctx, ir);
    let f = m.get_function("f").expect("f");
    assert_eq!(pathprof::promote::promote_after_inlining(f.as_value_ref()), 1, "the i64 update, not the vector one");
    if let Err(e) = m.verify() {
        panic!("promoted IR does not verify: {}\n{}", e.to_string(), m.print_to_string().to_string());
    }
    let text = m.print_to_string().to_string();
    let body: String = text
        .lines()
        .skip_while(|l| !l.starts_with("loop:"))
        .take_while(|l| !l.starts_with("exit:"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(body.contains("store <2 x i64>"), "the vector update stays in the loop:\n{text}");
    assert!(!body.contains("i64 0, i64 2"), "counter 2 is no longer updated in the loop:\n{text}");
}

/// A promotion slot is 0 outside its region, and each block entering the region says so before its
/// terminator, so that the slot's SSA value lives in the region only. Here an inner loop (promoted) sits in an
/// outer loop that a call which may not return keeps from promotion. Without the store on entry, SSA
/// construction carried every slot through the joins between its region's exits and entries: in pcre2's
/// `match()` (136 regions in a 5,241-block dispatch function) 27,464 PHIs of slots after the first SROA instead
/// of 2,189, which the optimiser took five times as long over (edge mode 16.5 s against 3.3 s; plain 2.0 s).
#[test]
fn a_promoted_slot_lives_in_its_region_only() {
    let ir = r#"
declare void @step(i64)

define void @f(i64 %n, i64 %m, i64 %x) {
entry:
  br label %outer
outer:
  %k = phi i64 [ 0, %entry ], [ %k1, %latch ]
  call void @step(i64 %k)
  br label %inner
inner:
  %i = phi i64 [ 0, %outer ], [ %i1, %inner ]
  %i1 = add i64 %i, 1
  %c = icmp ult i64 %i1, %m
  br i1 %c, label %inner, label %d1
d1:
  %c1 = icmp ult i64 %k, %x
  br i1 %c1, label %a1, label %j1
a1:
  call void @step(i64 1)
  br label %j1
j1:
  %c2 = icmp ugt i64 %k, %x
  br i1 %c2, label %a2, label %latch
a2:
  call void @step(i64 2)
  br label %latch
latch:
  %k1 = add i64 %k, 1
  %d = icmp ult i64 %k1, %n
  br i1 %d, label %outer, label %exit
exit:
  ret void
}
"#;
    let ctx = Context::create();
    let m = parse(&ctx, ir);
    // Without fork checks, which would split `outer` around the call.
    let config = config("edge+nochecks");
    assert!(module::instrument(m.as_mut_ptr(), std::ptr::null_mut(), &config).expect("instrument"));
    let f = m.get_function("f").expect("f");
    let slots: Vec<_> = f
        .get_first_basic_block()
        .unwrap()
        .get_instructions()
        .filter(|i| i.get_name().is_some_and(|n| n.to_str().unwrap().starts_with("pathprof.promoted")))
        .collect();
    assert_eq!(slots.len(), 1, "the inner loop's counter is promoted:\n{}", m.print_to_string().to_string());
    let block = |name: &str| f.get_basic_block_iter().find(|b| b.get_name().to_str() == Ok(name)).unwrap();
    let stores_zero_last = block("outer")
        .get_last_instruction()
        .and_then(|t| t.get_previous_instruction())
        .is_some_and(|s| s.print_to_string().to_string().contains("store i64 0, ptr %pathprof.promoted"));
    assert!(stores_zero_last, "the block entering the region zeroes the slot:\n{}", m.print_to_string().to_string());
}
