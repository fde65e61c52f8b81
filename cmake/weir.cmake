# Shared compile settings and helpers for every weir target.

add_library(weir_options INTERFACE)
target_compile_options(weir_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers)
if(WEIR_WERROR)
  target_compile_options(weir_options INTERFACE -Werror)
endif()
if(WEIR_SANITIZE)
  # -fno-sanitize=vptr: UBSan's dynamic-type check needs a free file descriptor the first time it meets a
  # type, so it reports false errors exactly where weir must keep working with none left (EMFILE:
  # tests/integration/http/connection_limits_test.cc). Every other UBSan check stays on.
  target_compile_options(weir_options INTERFACE -fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer
                         -fno-sanitize-recover=undefined)
  target_link_options(weir_options INTERFACE -fsanitize=address,undefined)
endif()
# LLD when it is installed (scripts/install-deps.sh installs it with the test tools): it links a
# sanitized test binary in about a third of the time of GNU ld, which CI pays on every clean clone.
include(CheckLinkerFlag)
check_linker_flag(CXX -fuse-ld=lld WEIR_HAVE_LLD)
if(WEIR_HAVE_LLD)
  target_link_options(weir_options INTERFACE -fuse-ld=lld)
endif()

# weir_library(NAME SOURCES ... DEPS ...): one CMake library per src/ folder.
function(weir_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_SOURCES)
    return()  # a module folder with no code yet
  endif()
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC weir_options ${ARG_DEPS})
endfunction()

# weir_test(NAME SOURCES ... DEPS ... LABEL unit|integration|crash|fuzz|slow)
function(weir_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE weir_options GTest::gtest_main GTest::gmock ${ARG_DEPS})
  if(WEIR_SANITIZE)
    # The tests' own code at -O0 (after the build type's flags, so it wins): their TEST bodies are half
    # of a clean sanitized build's compile time, which CI pays on every clean clone, and -O0 takes a
    # quarter off it (a large test file: 14.9 s against 19.5 s at -O1). The code under test is the
    # libraries', built with the build type's flags.
    target_compile_options(${name} PRIVATE -O0)
  endif()
  if(TARGET weir_test_pch)
    target_precompile_headers(${name} REUSE_FROM weir_test_pch)  # tests/CMakeLists.txt
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT} DISCOVERY_TIMEOUT 60)
endfunction()

# weir_unit_tests(MODULE DEPS ...): every *_test.cc of the calling folder (tests/unit/<module>) in one
# GoogleTest binary, unit_<module>, label unit; CTest still runs each test in a process of its own. One
# link per folder instead of one per file: linking is a tenth of a clean sanitized build.
function(weir_unit_tests module)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  weir_test(unit_${module} SOURCES ${tests} DEPS ${ARG_DEPS} LABEL unit)
endfunction()
