# Included by cpack (CPACK_PROJECT_CONFIG_FILE, CMakeLists.txt): the package's
# version is what the built library's querypilot_version() says, read from
# the header cmake/version.cmake wrote at the last build: VERSION for a
# release, VERSION+dev.g<commit> past it. Debian takes the text as it is as
# an upstream version ("+" is allowed), and sorts it after the release.
if(NOT EXISTS "${CPACK_QP_VERSION_HEADER}")
  message(FATAL_ERROR "${CPACK_QP_VERSION_HEADER} is missing: build QueryPilot before packaging it")
endif()
file(STRINGS "${CPACK_QP_VERSION_HEADER}" qp_version_line REGEX "^#define QUERYPILOT_VERSION \"")
if(NOT qp_version_line MATCHES "\"([0-9]+\\.[0-9]+\\.[0-9]+(\\+dev(\\.g[0-9a-f]+)?)?)\"")
  message(FATAL_ERROR "${CPACK_QP_VERSION_HEADER} holds no QueryPilot version")
endif()
set(CPACK_PACKAGE_VERSION "${CMAKE_MATCH_1}")
set(CPACK_DEBIAN_PACKAGE_VERSION "${CMAKE_MATCH_1}")
