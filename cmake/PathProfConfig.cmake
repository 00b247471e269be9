# PathProf CMake package: instrument single targets of a CMake project with pathprof.
#
#   list(APPEND CMAKE_PREFIX_PATH /path/to/pathprof/dist)    # or -DCMAKE_PREFIX_PATH=…
#   find_package(PathProf CONFIG REQUIRED)
#   pathprof_instrument(<target> [MODE path|edge|block|context|piecewise] [ATOMIC] [WEIGHTS <w>])
#
# pathprof_instrument compiles the C and C++ sources of <target> through the pathprof pass, with the options
# given (MODE defaults to path), and links the runtime into what links the target: into <target> itself if it
# is an executable or a shared library or module (each image carries its own hidden copy of the runtime, as
# with pathprof-clang), into every consumer if it is a static or object library. Other targets are
# untouched; the target's property PATHPROF_INSTRUMENTED holds the mode (instrumenting a target twice is an
# error). The project's C/C++ compiler must be clang 19 (CMAKE_C_COMPILER=clang-19,
# CMAKE_CXX_COMPILER=clang++-19): the pass is an LLVM 19 plugin.
#
# How: the pass reads its options from the environment at compile time, so each instrumented target gets
# pathprof-clang as its <LANG>_COMPILER_LAUNCHER ('pathprof-clang --pathprof-mode=M … --pathprof-launcher'),
# which runs the project's compiler with -fpass-plugin, the options as variables for that compile only, and
# -gline-tables-only unless the compile has a -g option: the profile of the CC=pathprof-clang route.
#
# Provides:
#   PathProf::runtime       imported static library: libpathprof_rt.a, include/pathprof.h (for
#                           __pathprof_dump()/__pathprof_reset()), linked with --exclude-libs
#   PathProf::pathprof      imported executable: the pathprof CLI
#   PathProf_PATHPROF       the pathprof CLI        PathProf_PLUGIN    libpathprof.so
#   PathProf_RUNTIME        libpathprof_rt.a        PathProf_INCLUDE_DIR  directory of pathprof.h
#   PathProf_CLANG, PathProf_CLANGXX  the wrappers (for the CC=/CXX= route)

# This file's own policy settings (functions keep those in effect where they are defined); the project's are
# restored at the end.
cmake_policy(PUSH)
cmake_policy(VERSION 3.16)

get_filename_component(_pathprof_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(PathProf_PLUGIN "${_pathprof_prefix}/lib/libpathprof.so")
set(PathProf_RUNTIME "${_pathprof_prefix}/lib/libpathprof_rt.a")
set(PathProf_PATHPROF "${_pathprof_prefix}/bin/pathprof")
set(PathProf_CLANG "${_pathprof_prefix}/bin/pathprof-clang")
set(PathProf_CLANGXX "${_pathprof_prefix}/bin/pathprof-clang++")
set(PathProf_INCLUDE_DIR "${_pathprof_prefix}/include")

foreach(_pathprof_file IN ITEMS PathProf_PLUGIN PathProf_RUNTIME PathProf_PATHPROF PathProf_CLANG)
  if(NOT EXISTS "${${_pathprof_file}}")
    set(PathProf_FOUND FALSE)
    set(PathProf_NOT_FOUND_MESSAGE
        "${${_pathprof_file}} is missing: build pathprof with scripts/build.sh, which installs ${_pathprof_prefix}")
    cmake_policy(POP)
    return()
  endif()
endforeach()

if(NOT TARGET PathProf::runtime)
  add_library(PathProf::runtime STATIC IMPORTED)
  get_filename_component(_pathprof_runtime_name "${PathProf_RUNTIME}" NAME)
  set_target_properties(PathProf::runtime PROPERTIES
    IMPORTED_LOCATION "${PathProf_RUNTIME}"
    INTERFACE_INCLUDE_DIRECTORIES "${PathProf_INCLUDE_DIR}"
    # One hidden copy of the runtime per linked image, as pathprof-clang links it.
    INTERFACE_LINK_OPTIONS "LINKER:--exclude-libs,${_pathprof_runtime_name}")
endif()
if(NOT TARGET PathProf::pathprof)
  add_executable(PathProf::pathprof IMPORTED)
  set_target_properties(PathProf::pathprof PROPERTIES IMPORTED_LOCATION "${PathProf_PATHPROF}")
endif()

# pathprof_instrument(<target> [MODE path|edge|block|context|piecewise] [ATOMIC] [WEIGHTS <w>])
#   MODE     what to measure (default path); see the README's "Compiler-side options"
#   ATOMIC   atomic counter updates (exact with several threads)
#   WEIGHTS  spanning-tree weights: llvm (default), uniform, bl94, profile:FILE
function(pathprof_instrument target)
  cmake_parse_arguments(PARSE_ARGV 1 _pp "ATOMIC" "MODE;WEIGHTS" "")
  if(_pp_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "pathprof_instrument(${target}): unknown arguments: ${_pp_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "pathprof_instrument: no target named ${target}")
  endif()
  get_target_property(_imported ${target} IMPORTED)
  get_target_property(_alias ${target} ALIASED_TARGET)
  get_target_property(_type ${target} TYPE)
  set(_kinds "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
  if(_imported OR _alias OR NOT _type MATCHES "${_kinds}")
    message(FATAL_ERROR "pathprof_instrument(${target}): only executables and libraries built by this project "
                        "can be instrumented (${target} is ${_type})")
  endif()
  get_target_property(_already ${target} PATHPROF_INSTRUMENTED)
  if(_already)
    message(FATAL_ERROR "pathprof_instrument(${target}): already instrumented (MODE ${_already})")
  endif()
  if(NOT DEFINED _pp_MODE)
    set(_pp_MODE path)
  endif()
  if(NOT _pp_MODE MATCHES "^(path|edge|block|context|piecewise)$")
    message(FATAL_ERROR
            "pathprof_instrument(${target}): unknown MODE '${_pp_MODE}' (path, edge, block, context, piecewise)")
  endif()
  set(_launcher "${PathProf_CLANG}" "--pathprof-mode=${_pp_MODE}")
  if(_pp_ATOMIC)
    list(APPEND _launcher "--pathprof-atomic")
  endif()
  if(DEFINED _pp_WEIGHTS)
    if(_pp_WEIGHTS STREQUAL "")
      message(FATAL_ERROR "pathprof_instrument(${target}): WEIGHTS needs a value")
    endif()
    list(APPEND _launcher "--pathprof-weights=${_pp_WEIGHTS}")
  endif()
  list(APPEND _launcher "--pathprof-launcher")

  # Instrument the languages whose compiler is clang 19; report the others' sources as uninstrumented.
  get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  set(_instrumented "")
  set(_clang_C clang-19)
  set(_clang_CXX clang++-19)
  foreach(_lang IN ITEMS C CXX)
    if(NOT _lang IN_LIST _languages)
      continue()
    endif()
    if(CMAKE_${_lang}_COMPILER_ID STREQUAL "Clang" AND CMAKE_${_lang}_COMPILER_VERSION MATCHES "^19\\.")
      # After the pathprof launcher, a launcher the target already has (ccache…) still runs the compiler.
      get_target_property(_previous ${target} ${_lang}_COMPILER_LAUNCHER)
      if(_previous)
        set_property(TARGET ${target} PROPERTY ${_lang}_COMPILER_LAUNCHER ${_previous} ${_launcher})
      else()
        set_property(TARGET ${target} PROPERTY ${_lang}_COMPILER_LAUNCHER ${_launcher})
      endif()
      list(APPEND _instrumented ${_lang})
    else()
      message(WARNING "pathprof_instrument(${target}): ${_lang} sources are compiled by "
                      "${CMAKE_${_lang}_COMPILER_ID} ${CMAKE_${_lang}_COMPILER_VERSION}, not clang 19, and are "
                      "not instrumented (configure with -DCMAKE_${_lang}_COMPILER=${_clang_${_lang}})")
    endif()
  endforeach()
  if(NOT _instrumented)
    message(FATAL_ERROR "pathprof_instrument(${target}): pathprof needs clang 19 as the C or C++ compiler")
  endif()

  # The runtime: linked into the image the target's code ends up in. Properties are appended directly so the
  # project's own target_link_libraries calls may use either signature.
  if(_type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY)$")
    set_property(TARGET ${target} APPEND PROPERTY INTERFACE_LINK_LIBRARIES PathProf::runtime)
  else()
    set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES PathProf::runtime)
  endif()
  set_property(TARGET ${target} APPEND PROPERTY INCLUDE_DIRECTORIES "${PathProf_INCLUDE_DIR}")
  set_property(TARGET ${target} PROPERTY PATHPROF_INSTRUMENTED ${_pp_MODE})
endfunction()

unset(_pathprof_file)
cmake_policy(POP)
