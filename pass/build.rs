//! Compiles the C++ registration shim against LLVM 19 (always `llvm-config-19`: /usr/bin/llvm-config may be
//! an older LLVM on these machines).
use std::process::Command;

fn llvm_config(arg: &str) -> String {
    let exe = std::env::var("PATHPROF_LLVM_CONFIG").unwrap_or_else(|_| "llvm-config-19".into());
    let out = Command::new(&exe)
        .arg(arg)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {exe} (install LLVM 19: scripts/setup.sh): {e}"));
    assert!(out.status.success(), "{exe} {arg} failed");
    String::from_utf8(out.stdout).expect("llvm-config output is UTF-8").trim().to_string()
}

fn main() {
    println!("cargo:rerun-if-changed=shim/shim.cpp");
    println!("cargo:rerun-if-env-changed=PATHPROF_LLVM_CONFIG");
    let mut build = cc::Build::new();
    build.cpp(true).file("shim/shim.cpp").warnings(false);
    for flag in llvm_config("--cxxflags").split_whitespace() {
        build.flag(flag);
    }
    build.compile("pathprof_shim");
    println!("cargo:rustc-link-search=native={}", llvm_config("--libdir"));
    println!("cargo:rustc-link-lib=dylib=LLVM-19");
}
