# One place for warning flags and the helpers that define each kind of target.

# -Wno-restrict: GCC 12 false positive inside std::string operator+ (GCC bug 105329).
set(ATVOSS_WARNINGS -Wall -Wextra -Wpedantic -Wno-restrict)
# Tests relax sign-compare (EXPECT_EQ(size_t, int)) and dangling-else (an EXPECT_* under an
# unbraced if expands to if/else) on purpose: both are idiomatic GoogleTest.
set(ATVOSS_TEST_WARNINGS -Wall -Wextra -Wno-sign-compare -Wno-restrict -Wno-dangling-else)

if(ATVOSS_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

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
  target_compile_options(${name} PRIVATE ${ATVOSS_TEST_WARNINGS})
  target_compile_definitions(${name} PRIVATE
    ATVOSS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    ATVOSS_BINARY_DIR="${PROJECT_BINARY_DIR}"
    ATVOSS_DATA_DIR="${PROJECT_SOURCE_DIR}/data")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600 ${ARG_PROPERTIES})
endfunction()

# atvoss_tool(NAME SOURCE DEPS ...): a command-line program in bin/.
function(atvoss_tool name source)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} CLI11::CLI11)
  target_compile_options(${name} PRIVATE ${ATVOSS_WARNINGS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  set_property(GLOBAL APPEND PROPERTY ATVOSS_TOOL_TARGETS ${name})
endfunction()

# atvoss_bench(NAME SOURCE DEPS ...): a Google Benchmark program in bin/.
function(atvoss_bench name source)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  target_compile_options(${name} PRIVATE ${ATVOSS_WARNINGS})
  target_compile_definitions(${name} PRIVATE ATVOSS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    ATVOSS_DATA_DIR="${PROJECT_SOURCE_DIR}/data")
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endfunction()
