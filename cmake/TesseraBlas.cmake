# tessera_blas: the CBLAS interface (cblas_sgemm / cblas_dgemm) of the system's BLAS, found with
# CMake's FindBLAS, so any vendor works: -DBLA_VENDOR=OpenBLAS | FlexiBLAS | Intel10_64lp |
# Intel10_64lp_seq | Arm | NVPL | FLAME (BLIS) | Generic (the reference BLAS) | ... (FindBLAS's
# list). Unset, OpenBLAS where it is found, else the first BLAS FindBLAS finds.
#
# Sets, for the install (cmake/TesseraInstall.cmake): TESSERA_BLAS_VENDOR (the BLA_VENDOR that
# found it; "All" when FindBLAS chose), TESSERA_BLAS_LIBRARIES.
#
# The header: cblas.h from the library's prefix (or the system); TESSERA_CBLAS_HEADER names
# another one (mkl_cblas.h is taken for the Intel vendors, nvpl_blas_cblas.h for NVPL), which a
# generated cblas.h includes so that tessera's sources keep `#include <cblas.h>`. Only LP64
# interfaces (32-bit int indices).

set(TESSERA_CBLAS_HEADER "" CACHE STRING
  "The vendor's CBLAS header when it is not cblas.h (empty: cblas.h; mkl_cblas.h for BLA_VENDOR=Intel*, nvpl_blas_cblas.h for NVPL)")

if(DEFINED BLA_VENDOR AND NOT BLA_VENDOR STREQUAL "")
  find_package(BLAS REQUIRED)
  set(TESSERA_BLAS_VENDOR "${BLA_VENDOR}")
else()
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS QUIET)
  if(BLAS_FOUND)
    set(TESSERA_BLAS_VENDOR OpenBLAS)
  else()
    unset(BLA_VENDOR)
    find_package(BLAS)
    if(NOT BLAS_FOUND)
      message(FATAL_ERROR "tessera: no BLAS found: install OpenBLAS (Debian: libopenblas-dev; scripts/setup.sh) "
                          "or name your BLAS with -DBLA_VENDOR=... (CMake's FindBLAS), its prefix in CMAKE_PREFIX_PATH")
    endif()
    set(TESSERA_BLAS_VENDOR All)
  endif()
endif()
set(TESSERA_BLAS_LIBRARIES ${BLAS_LIBRARIES})

# ---- the CBLAS header ------------------------------------------------------------------------
set(_tessera_cblas_header "${TESSERA_CBLAS_HEADER}")
if(_tessera_cblas_header STREQUAL "")
  if(TESSERA_BLAS_VENDOR MATCHES "^Intel")
    set(_tessera_cblas_header mkl_cblas.h)
  elseif(TESSERA_BLAS_VENDOR STREQUAL "NVPL")
    set(_tessera_cblas_header nvpl_blas_cblas.h)
  else()
    set(_tessera_cblas_header cblas.h)
  endif()
endif()
set(_tessera_cblas_hints)
foreach(_lib IN LISTS BLAS_LIBRARIES)
  if(IS_ABSOLUTE "${_lib}")
    get_filename_component(_dir "${_lib}" DIRECTORY)
    list(APPEND _tessera_cblas_hints "${_dir}/../include")  # <prefix>/lib/libX.so -> <prefix>/include
  endif()
endforeach()
if(DEFINED ENV{MKLROOT})
  list(APPEND _tessera_cblas_hints "$ENV{MKLROOT}/include")
endif()
# Debian/Ubuntu keep each OpenBLAS flavour's cblas.h in its own folder; a bare cblas.h may be an
# alternative pointing at another BLAS (harmless: the prototypes are CBLAS's).
if(TESSERA_BLAS_VENDOR STREQUAL "OpenBLAS" OR BLAS_LIBRARIES MATCHES "openblas")
  set(_tessera_cblas_suffixes openblas-pthread openblas-openmp openblas-serial openblas64-pthread openblas)
else()
  set(_tessera_cblas_suffixes blis flexiblas mkl nvpl)
endif()
find_path(TESSERA_CBLAS_INCLUDE_DIR ${_tessera_cblas_header}
  HINTS ${_tessera_cblas_hints} PATH_SUFFIXES ${_tessera_cblas_suffixes})
if(NOT TESSERA_CBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "tessera: BLAS found (${BLAS_LIBRARIES}) but not its ${_tessera_cblas_header}: "
                      "set TESSERA_CBLAS_INCLUDE_DIR, or TESSERA_CBLAS_HEADER if your vendor names it otherwise "
                      "(Debian: libopenblas-dev or libblas-dev ship cblas.h)")
endif()

# ---- the CBLAS symbols: in the BLAS library itself, or a separate libcblas ---------------------
include(CheckFunctionExists)
include(CMakePushCheckState)
cmake_push_check_state(RESET)
set(CMAKE_REQUIRED_LIBRARIES ${BLAS_LIBRARIES})
set(CMAKE_REQUIRED_QUIET ON)
# Cached per BLAS, so that another -DBLA_VENDOR in the same build folder checks again.
string(MAKE_C_IDENTIFIER "${BLAS_LIBRARIES}" _tessera_blas_id)
check_function_exists(cblas_dgemm TESSERA_BLAS_HAS_CBLAS_${_tessera_blas_id})
# OpenBLAS's own calls (thread count, build configuration), only where its header declares them.
set(TESSERA_BLAS_HAS_OPENBLAS_API OFF)
if(EXISTS "${TESSERA_CBLAS_INCLUDE_DIR}/openblas_config.h")
  check_function_exists(openblas_get_config TESSERA_BLAS_HAS_OPENBLAS_API_${_tessera_blas_id})
  set(TESSERA_BLAS_HAS_OPENBLAS_API ${TESSERA_BLAS_HAS_OPENBLAS_API_${_tessera_blas_id}})
endif()
cmake_pop_check_state()
set(_tessera_cblas_extra)
if(NOT TESSERA_BLAS_HAS_CBLAS_${_tessera_blas_id})
  find_library(TESSERA_CBLAS_LIBRARY NAMES cblas satlas tatlas HINTS ${_tessera_cblas_hints})
  if(NOT TESSERA_CBLAS_LIBRARY)
    message(FATAL_ERROR "tessera: the BLAS found (${BLAS_LIBRARIES}) has no cblas_dgemm and no libcblas was found")
  endif()
  set(_tessera_cblas_extra ${TESSERA_CBLAS_LIBRARY})
  list(APPEND TESSERA_BLAS_LIBRARIES ${TESSERA_CBLAS_LIBRARY})
endif()

add_library(tessera_blas INTERFACE)
target_link_libraries(tessera_blas INTERFACE BLAS::BLAS ${_tessera_cblas_extra})
if(NOT _tessera_cblas_header STREQUAL "cblas.h")
  set(_tessera_cblas_shim ${PROJECT_BINARY_DIR}/generated/cblas-shim)
  file(WRITE ${_tessera_cblas_shim}/cblas.h.in "// Generated by cmake/TesseraBlas.cmake: this BLAS names its CBLAS header otherwise.\n#pragma once\n#include <@_tessera_cblas_header@>\n")
  configure_file(${_tessera_cblas_shim}/cblas.h.in ${_tessera_cblas_shim}/cblas.h @ONLY)
  target_include_directories(tessera_blas SYSTEM INTERFACE $<BUILD_INTERFACE:${_tessera_cblas_shim}>)
endif()
# Only tessera's own sources include cblas.h: not part of the installed interface.
target_include_directories(tessera_blas SYSTEM INTERFACE $<BUILD_INTERFACE:${TESSERA_CBLAS_INCLUDE_DIR}>)
if(TESSERA_BLAS_HAS_OPENBLAS_API)
  set(_tessera_blas_name OpenBLAS)
  target_compile_definitions(tessera_blas INTERFACE TESSERA_BLAS_OPENBLAS=1)
elseif(TESSERA_BLAS_VENDOR STREQUAL "All")
  set(_tessera_blas_name "BLAS")
else()
  set(_tessera_blas_name "${TESSERA_BLAS_VENDOR}")
endif()
target_compile_definitions(tessera_blas INTERFACE "TESSERA_BLAS_NAME=\"${_tessera_blas_name}\"")
message(STATUS "tessera: BLAS ${_tessera_blas_name} (BLA_VENDOR ${TESSERA_BLAS_VENDOR}): ${TESSERA_BLAS_LIBRARIES}; "
               "${_tessera_cblas_header} in ${TESSERA_CBLAS_INCLUDE_DIR}")
