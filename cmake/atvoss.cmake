# One place for warning flags and the helpers that define each kind of target.

# -Wno-restrict: GCC 12 false positive inside std::string operator+ (GCC bug 105329).
set(ATVOSS_WARNINGS -Wall -Wextra -Wpedantic -Wno-restrict)
# Tests relax sign-compare (EXPECT_EQ(size_t, int)) and dangling-else (an EXPECT_* under an
# unbraced if expands to if/else) on purpose: both are idiomatic GoogleTest.
set(ATVOSS_TEST_WARNINGS -Wall -Wextra -Wno-sign-compare -Wno-restrict -Wno-dangling-else)
# CI builds with warnings as errors (.ci/run). GCC 12's flow-sensitive checks of inlined
# libstdc++ string code (std::string operator+ and insert: GCC bugs 105329, 105651) stay
# warnings: they fire inside the standard library, and more often with precompiled headers.
option(ATVOSS_WERROR "Treat warnings in atvoss's own code as errors" OFF)
if(ATVOSS_WERROR)
  set(werror -Werror -Wno-error=stringop-overflow -Wno-error=array-bounds)
  list(APPEND ATVOSS_WARNINGS ${werror})
  list(APPEND ATVOSS_TEST_WARNINGS ${werror})
endif()

if(ATVOSS_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# Build time (docs/decisions/build-time.md): ccache when installed; one precompiled header per
# kind of target (libraries, tests, tools, benchmarks), built once and reused by every target
# of that kind; the tests' own code at -O1 (its optimisation took a third of their compile
# time; the libraries they test keep the build type's flags).
find_program(ATVOSS_CCACHE ccache)
if(ATVOSS_CCACHE)
  # pch_defines, time_macros: ccache caches nothing that uses a precompiled header without them.
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros ${ATVOSS_CCACHE})
endif()
option(ATVOSS_PCH "Precompiled headers (one per kind of target)" ON)
# Unity builds of the libraries and test binaries (docs/decisions/build-time.md): their files
# are compiled in batches, so the heavy headers are parsed once per batch, not once per file.
option(ATVOSS_UNITY "Unity builds of the libraries and test binaries" ON)
set(ATVOSS_TEST_OPTIMIZE -O1)

# The headers nearly every translation unit parses.
set(ATVOSS_PCH_COMMON <algorithm> <cstdint> <functional> <map> <memory> <optional> <string> <vector>
    <nlohmann/json.hpp>)

# atvoss_pch_source(NAME HEADERS ... [OPTIONS ...] [DEFINITIONS ...] [LIBS ...]): an object
# library that only builds the precompiled header others reuse. REUSE_FROM needs the flags of
# the targets that reuse it, so each kind's options and definitions are given here too.
function(atvoss_pch_source name)
  cmake_parse_arguments(ARG "" "" "HEADERS;OPTIONS;DEFINITIONS;LIBS" ${ARGN})
  set(stub ${PROJECT_BINARY_DIR}/pch/${name}.cpp)
  if(NOT EXISTS ${stub})
    file(WRITE ${stub} "// The translation unit that builds ${name}'s precompiled header.\n")
  endif()
  add_library(${name} OBJECT ${stub})
  target_precompile_headers(${name} PRIVATE ${ARG_HEADERS})
  target_compile_options(${name} PRIVATE ${ARG_OPTIONS})
  target_compile_definitions(${name} PRIVATE ${ARG_DEFINITIONS})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
endfunction()

# atvoss_reuse_pch(TARGET KIND): TARGET reuses the precompiled header of KIND (lib, test, tool,
# bench) when ATVOSS_PCH is on.
function(atvoss_reuse_pch target kind)
  if(ATVOSS_PCH)
    if(NOT TARGET atvoss_pch_${kind})
      atvoss_pch_kind(${kind})
    endif()
    target_precompile_headers(${target} REUSE_FROM atvoss_pch_${kind})
  endif()
endfunction()

# The four kinds, created on first use (tests and benchmarks need their packages found).
function(atvoss_pch_kind kind)
  set(defs ATVOSS_VERSION="${PROJECT_VERSION}")
  if(kind STREQUAL "lib")
    atvoss_pch_source(atvoss_pch_lib HEADERS ${ATVOSS_PCH_COMMON} OPTIONS ${ATVOSS_WARNINGS} DEFINITIONS ${defs})
    set_target_properties(atvoss_pch_lib PROPERTIES POSITION_INDEPENDENT_CODE ON)  # as the libraries
  elseif(kind STREQUAL "test")
    atvoss_pch_source(atvoss_pch_test HEADERS <gtest/gtest.h> <gmock/gmock.h> ${ATVOSS_PCH_COMMON}
                      OPTIONS ${ATVOSS_TEST_WARNINGS} ${ATVOSS_TEST_OPTIMIZE} DEFINITIONS ${defs}
                      LIBS GTest::gtest GTest::gmock)
  elseif(kind STREQUAL "tool")
    atvoss_pch_source(atvoss_pch_tool HEADERS <CLI/CLI.hpp> ${ATVOSS_PCH_COMMON} OPTIONS ${ATVOSS_WARNINGS}
                      DEFINITIONS ${defs} LIBS CLI11::CLI11)
  elseif(kind STREQUAL "bench")
    atvoss_pch_source(atvoss_pch_bench HEADERS <benchmark/benchmark.h> ${ATVOSS_PCH_COMMON}
                      OPTIONS ${ATVOSS_WARNINGS} DEFINITIONS ${defs} LIBS benchmark::benchmark)
  endif()
endfunction()

# atvoss_unity(NAME): a unity build of the target when ATVOSS_UNITY is on. A file's Impl may
# hold a type from its own anonymous namespace; batched into a unity file, GCC sees that file
# as included and warns (-Wsubobject-linkage). Each file is still compiled once.
function(atvoss_unity name)
  if(ATVOSS_UNITY)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON)
    target_compile_options(${name} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

# atvoss_library(NAME DEPS ...): a static library from every .cpp in the current folder.
# Public headers sit beside the sources and are included as "<module>/<file>.hpp".
function(atvoss_library name)
  cmake_parse_arguments(ARG "" "" "DEPS;EXCLUDE" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(ex IN LISTS ARG_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "/${ex}$")
  endforeach()
  if(sources)
    add_library(${name} STATIC ${sources})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${ARG_DEPS})
    target_compile_options(${name} PRIVATE ${ATVOSS_WARNINGS})
    target_compile_definitions(${name} PUBLIC ATVOSS_VERSION="${PROJECT_VERSION}")
    # Position-independent: the Python module and the runtime's and table's shared libraries
    # link them, and a shared object holds only such code (python/CMakeLists.txt says why).
    set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    atvoss_unity(${name})
    atvoss_reuse_pch(${name} lib)
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# atvoss_test(NAME DEPS ... [PROPERTIES ...]): one GoogleTest binary from every .cpp in the
# current folder; PROPERTIES are added to each of its tests (e.g. a ctest fixture).
function(atvoss_test name)
  cmake_parse_arguments(ARG "" "" "DEPS;PROPERTIES" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(NOT sources)
    return()
  endif()
  add_executable(${name} ${sources})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_options(${name} PRIVATE ${ATVOSS_TEST_WARNINGS} ${ATVOSS_TEST_OPTIMIZE})
  atvoss_unity(${name})
  atvoss_reuse_pch(${name} test)
  target_compile_definitions(${name} PRIVATE
    ATVOSS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    ATVOSS_BINARY_DIR="${PROJECT_BINARY_DIR}"
    ATVOSS_DATA_DIR="${PROJECT_SOURCE_DIR}/data")
  # LABELS: the binary's name, so that a run can pick whole suites (scripts/sanitize.sh).
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600 LABELS ${name} ${ARG_PROPERTIES})
endfunction()

# atvoss_tool(NAME SOURCE DEPS ...): a command-line program in bin/.
function(atvoss_tool name source)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} CLI11::CLI11)
  target_compile_options(${name} PRIVATE ${ATVOSS_WARNINGS})
  atvoss_reuse_pch(${name} tool)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  set_property(GLOBAL APPEND PROPERTY ATVOSS_TOOL_TARGETS ${name})
endfunction()

# atvoss_bench(NAME SOURCE DEPS ...): a Google Benchmark program in bin/.
function(atvoss_bench name source)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  target_compile_options(${name} PRIVATE ${ATVOSS_WARNINGS})
  # OpenMP defines _OPENMP, which makes a header precompiled without it unusable.
  if(NOT "OpenMP::OpenMP_CXX" IN_LIST ARG_DEPS)
    atvoss_reuse_pch(${name} bench)
  endif()
  target_compile_definitions(${name} PRIVATE ATVOSS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    ATVOSS_DATA_DIR="${PROJECT_SOURCE_DIR}/data")
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endfunction()

# atvoss_c_library(TARGET SOURCE LIB OUTPUT): build/lib/lib<OUTPUT>.so from SOURCE (a C API's
# definitions) over the static library LIB, exporting only the symbols the version script
# <current dir>/exports.map names: --exclude-libs keeps the static libraries' symbols private,
# and the script hides the standard library's template instances too.
function(atvoss_c_library target source lib output)
  add_library(${target} SHARED ${source})
  target_link_libraries(${target} PRIVATE ${lib})
  target_compile_options(${target} PRIVATE ${ATVOSS_WARNINGS})
  target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL
                      -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/exports.map)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/exports.map)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${output}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
endfunction()
