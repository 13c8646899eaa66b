# querypilot_version(): VERSION for a release, VERSION+dev... for a build of
# work past it, so that a build never claims to be a release it is not.
#
#   cmake -DSOURCE_DIR=<tree> -DOUT=<header> -P cmake/version.cmake
#
# writes OUT (#define QUERYPILOT_VERSION "...") only when its text changes.
# A build is past the release when git says so (HEAD is not the commit that
# last changed VERSION) or when CHANGELOG.md's "## [Unreleased]" section
# lists a change. From a git tree the commit is named
# (0.1.0+dev.g0123456789ab); from a tree without git history (a tarball)
# it reads 0.1.0+dev. Semantic Versioning's build metadata: the release it
# starts from comes first and still compares as that release.
cmake_minimum_required(VERSION 3.22)
file(STRINGS "${SOURCE_DIR}/VERSION" release LIMIT_COUNT 1 REGEX "^[0-9]+\\.[0-9]+\\.[0-9]+$")
if(NOT release)
  message(FATAL_ERROR "VERSION must hold one line MAJOR.MINOR.PATCH")
endif()

# CHANGELOG.md: a change listed under "## [Unreleased]" is a change past the
# release.
set(past_release OFF)
if(EXISTS "${SOURCE_DIR}/CHANGELOG.md")
  file(READ "${SOURCE_DIR}/CHANGELOG.md" changelog)
  string(FIND "${changelog}" "\n## [Unreleased]\n" at)
  if(at GREATER_EQUAL 0)
    math(EXPR at "${at} + 17")
    string(SUBSTRING "${changelog}" ${at} -1 unreleased)
    string(FIND "${unreleased}" "\n## " end)
    if(end GREATER_EQUAL 0)
      string(SUBSTRING "${unreleased}" 0 ${end} unreleased)
    endif()
    if("${unreleased}" MATCHES "(^|\n)[-*] ")
      set(past_release ON)
    endif()
  endif()
endif()

# git, where this tree is a repository's top (not a folder inside another).
set(commit "")
find_program(QP_GIT git)
if(QP_GIT)
  execute_process(COMMAND "${QP_GIT}" -C "${SOURCE_DIR}" rev-parse --show-toplevel HEAD
                  OUTPUT_VARIABLE top_and_head RESULT_VARIABLE failed ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT failed)
    string(REPLACE "\n" ";" top_and_head "${top_and_head}")
    list(GET top_and_head 0 top)
    list(GET top_and_head 1 head)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" source)
    execute_process(COMMAND "${QP_GIT}" -C "${SOURCE_DIR}" log -1 --format=%H -- VERSION
                    OUTPUT_VARIABLE released_at RESULT_VARIABLE failed ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(top STREQUAL source AND NOT failed AND released_at)
      if(NOT released_at STREQUAL head)
        set(past_release ON)
      endif()
      string(SUBSTRING "${head}" 0 12 commit)
    endif()
  endif()
endif()

set(version "${release}")
if(past_release)
  set(version "${release}+dev")
  if(commit)
    set(version "${version}.g${commit}")
  endif()
endif()

set(text "#pragma once\n// Written by cmake/version.cmake: VERSION, and +dev past the release.\n#define QUERYPILOT_VERSION \"${version}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
