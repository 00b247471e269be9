//! `pathprof-clang`: clang-19 with pathprof instrumentation; see the library docs. Invoked through a link or
//! copy named `pathprof-clang++` (any name ending in `++`), it is the C++ driver.

fn main() {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    pathprof_clang_wrapper::main(pathprof_clang_wrapper::Driver::from_argv0(&argv0))
}
