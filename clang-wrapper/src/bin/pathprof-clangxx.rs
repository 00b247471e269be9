//! `pathprof-clangxx`: the C++ driver (`pathprof-clang++`, which cargo cannot name); see the library docs.

fn main() {
    pathprof_clang_wrapper::main(pathprof_clang_wrapper::Driver::Cxx)
}
