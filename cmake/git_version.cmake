# Writes OUT (a C++ header) with the project version and the git commit of SRC_DIR; run at every build
# (add_custom_target in src/server), the file is rewritten only when its text changes, so an unchanged
# commit rebuilds nothing. A tree without git (a source tarball) says "unknown".
execute_process(COMMAND git -C "${SRC_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SRC_DIR}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT dirty STREQUAL "")
    set(commit "${commit}-dirty")
  endif()
endif()
set(text "#pragma once\nnamespace weir {\ninline constexpr const char* version = \"${VERSION}\";\ninline constexpr const char* git_commit = \"${commit}\";\n}  // namespace weir\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
