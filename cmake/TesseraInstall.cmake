# cmake --install [--prefix P]: what a site installs (docs/building.md, "Installing").
#
#   bin/tessera                              the command line (statically linked to tessera's code)
#   include/tessera/tessera.hpp              the public API (tessera::multiply over an MPI_Comm)
#   lib/libtessera.so (or .a)                that API; the internal archives too when static
#   lib/cmake/tessera/tesseraConfig.cmake    find_package(tessera) -> tessera::tessera
#     + tesseraConfigVersion.cmake, tesseraTargets.cmake
#   lib/pkgconfig/tessera.pc                 pkg-config --cflags --libs tessera
#   share/tessera/{slurm,configs,tuned,scripts,docs}   the sbatch scripts (which find the
#     installed binary and share/tessera by themselves), the configs, the tune files of
#     `--kernel auto`, what the scripts run, and the documentation (+ README.md, LICENSE)
#   share/doc/tessera/LICENSE                the license (BSD-3-Clause), where packagers look
#
# Included from the top-level CMakeLists once every target exists. The installed targets come
# from one list, TESSERA_INSTALL_INTERNAL_TARGETS: with a static libtessera, the archives and
# interface targets it links (exported as tessera::<name>, never to be used directly).
include(CMakePackageConfigHelpers)

set(TESSERA_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tessera CACHE STRING
  "Where tesseraConfig.cmake is installed (relative to the prefix)")
mark_as_advanced(TESSERA_INSTALL_CMAKEDIR)

# tessera's internal targets linked by a static libtessera, in link order: one per layer
# (src/CMakeLists.txt), and the interface targets they link.
set(TESSERA_INSTALL_INTERNAL_TARGETS tessera_commands tessera_job tessera_algorithms tessera_backend tessera_comm tessera_io tessera_report tessera_partition tessera_kernels
    tessera_core tessera_blas tessera_warnings)
if(TESSERA_HAVE_CUDA)
  list(APPEND TESSERA_INSTALL_INTERNAL_TARGETS tessera_cuda_kernels)
  if(TARGET tessera_cuda_kernels_sm90a)
    list(APPEND TESSERA_INSTALL_INTERNAL_TARGETS tessera_cuda_kernels_sm90a)
  endif()
endif()

set(_tessera_exported tessera_api)
if(NOT TESSERA_SHARED_LIBRARY)
  list(APPEND _tessera_exported ${TESSERA_INSTALL_INTERNAL_TARGETS})
endif()

# The installed binary and library find their non-system libraries (CUDA, NCCL, a site's MPI,
# HDF5 or BLAS) where they were found at build time.
set_target_properties(tessera tessera_api PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS tessera RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${_tessera_exported} EXPORT tesseraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tessera DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")

# ---- the CMake package ------------------------------------------------------------------------
install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
# What tesseraConfig.cmake needs to find again (the static case links these libraries' targets).
set(TESSERA_CONFIG_SHARED ${TESSERA_SHARED_LIBRARY})
set(TESSERA_CONFIG_HAVE_CUDA ${TESSERA_HAVE_CUDA})
set(TESSERA_CONFIG_BLA_VENDOR ${TESSERA_BLAS_VENDOR})
set(TESSERA_CONFIG_ZLIB OFF)
if(TARGET ZLIB::ZLIB)
  set(TESSERA_CONFIG_ZLIB ON)
endif()
# Libraries the static archives name by their full path (HDF5, NCCL, libdeflate, liblzf, liblz4,
# libzstd): checked at find_package time, so a missing one is named instead of failing at link time.
set(TESSERA_CONFIG_LIBRARY_FILES)
foreach(_lib IN LISTS HDF5_C_LIBRARIES TESSERA_NCCL_LIBRARY TESSERA_LIBDEFLATE_LIBRARY TESSERA_LZF_LIBRARY
                  TESSERA_LZ4_LIBRARY TESSERA_ZSTD_LIBRARY)
  if(IS_ABSOLUTE "${_lib}")
    list(APPEND TESSERA_CONFIG_LIBRARY_FILES "${_lib}")
  endif()
endforeach()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/tesseraConfig.cmake
  INSTALL_DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
# 0.x: a new minor version may change the API; 1.x and later: the same major version.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/tesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/tesseraConfig.cmake ${PROJECT_BINARY_DIR}/package/tesseraConfigVersion.cmake
  DESTINATION ${TESSERA_INSTALL_CMAKEDIR})

# ---- pkg-config -------------------------------------------------------------------------------
# Libs.private (static libtessera only): the internal archives, then each dependency's library
# file (generator expressions resolve imported targets at generate time).
set(TESSERA_PC_LIBS_PRIVATE "")
if(NOT TESSERA_SHARED_LIBRARY)
  set(_pc)
  foreach(_t IN LISTS TESSERA_INSTALL_INTERNAL_TARGETS)
    get_target_property(_type ${_t} TYPE)
    if(_type STREQUAL "STATIC_LIBRARY")
      list(APPEND _pc "-l$<TARGET_FILE_BASE_NAME:${_t}>")
    endif()
  endforeach()
  foreach(_lib IN LISTS HDF5_C_LIBRARIES TESSERA_BLAS_LIBRARIES TESSERA_NCCL_LIBRARY TESSERA_LIBDEFLATE_LIBRARY TESSERA_LZF_LIBRARY
                  TESSERA_LZ4_LIBRARY TESSERA_ZSTD_LIBRARY)
    if(_lib)
      list(APPEND _pc "${_lib}")
    endif()
  endforeach()
  foreach(_t fmt::fmt ZLIB::ZLIB CUDA::cublas CUDA::cudart)
    if(TARGET ${_t})
      list(APPEND _pc "$<TARGET_LINKER_FILE:${_t}>")
    endif()
  endforeach()
  list(APPEND _pc -pthread ${CMAKE_DL_LIBS})
  list(TRANSFORM _pc REPLACE "^(dl|rt|m)$" "-l\\1")
  list(JOIN _pc " " TESSERA_PC_LIBS_PRIVATE)
  set(TESSERA_PC_LIBS_PRIVATE "Libs.private: ${TESSERA_PC_LIBS_PRIVATE}")
endif()
# MPI (Requires: so that a plain C++ compiler finds <mpi.h> and libmpi): the pkg-config module of
# the MPI tessera was built with, the first of TESSERA_PKGCONFIG_MPI's candidates whose include
# directories are the ones CMake found (Open MPI: ompi-c; MPICH: mpich; Debian's alternative: mpi-c).
# None found: no Requires, and a program builds with the MPI wrapper (mpicxx) instead.
set(TESSERA_PKGCONFIG_MPI "" CACHE STRING
  "pkg-config module of MPI for tessera.pc's Requires (empty: the first of ompi-c, mpich, mpi-c that matches the MPI found; NONE: none)")
find_program(TESSERA_PKG_CONFIG_EXECUTABLE pkg-config)
mark_as_advanced(TESSERA_PKG_CONFIG_EXECUTABLE)
set(TESSERA_PC_REQUIRES "")
if(TESSERA_PKGCONFIG_MPI STREQUAL "NONE")
  set(_tessera_pc_mpi "")
elseif(NOT TESSERA_PKGCONFIG_MPI STREQUAL "")
  set(_tessera_pc_mpi "${TESSERA_PKGCONFIG_MPI}")
elseif(TESSERA_PKG_CONFIG_EXECUTABLE)
  set(_tessera_pc_mpi "")
  foreach(_m ompi-c mpich mpi-c)
    execute_process(COMMAND ${TESSERA_PKG_CONFIG_EXECUTABLE} --cflags-only-I ${_m}
                    OUTPUT_VARIABLE _flags RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_rc EQUAL 0)
      foreach(_dir IN LISTS MPI_C_INCLUDE_DIRS)
        string(FIND " ${_flags} " " -I${_dir} " _at)
        string(FIND " ${_flags} " " -I${_dir}/ " _at_slash)
        if(_at GREATER -1 OR _at_slash GREATER -1)
          set(_tessera_pc_mpi ${_m})
          break()
        endif()
      endforeach()
    endif()
    if(_tessera_pc_mpi)
      break()
    endif()
  endforeach()
endif()
if(_tessera_pc_mpi)
  set(TESSERA_PC_REQUIRES "Requires: ${_tessera_pc_mpi}")
  message(STATUS "tessera: tessera.pc requires ${_tessera_pc_mpi} (MPI)")
else()
  message(STATUS "tessera: tessera.pc names no MPI module (none matches ${MPI_C_INCLUDE_DIRS}): build with mpicxx")
endif()
# libtessera's directory as the program's run path (-Wl,-rpath), unless the compiler searches it
# anyway (a system directory): decided at install time, when the prefix is known.
set(TESSERA_PC_SYSTEM_LIBDIRS ${CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES} /usr/lib /usr/lib64 /lib /lib64)
# @TESSERA_PC_PREFIX@ stays for install time (the prefix may be given to cmake --install).
foreach(_v PREFIX LIBDIR INCLUDEDIR RPATH)
  set(TESSERA_PC_${_v} "@TESSERA_PC_${_v}@")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/tessera.pc.in ${PROJECT_BINARY_DIR}/package/tessera.pc.configured @ONLY)
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/package/tessera.pc.in INPUT ${PROJECT_BINARY_DIR}/package/tessera.pc.configured)
set(_tessera_pc_templates ${PROJECT_BINARY_DIR}/package/tessera.pc.in)

# ---- libtessera_scalapack (tessera::scalapack, tessera-scalapack.pc) ----------------------------
# Beside libtessera, which it finds through its run path ($ORIGIN); the system ScaLAPACK it hands
# calls to is named by the application's own link line (-ltessera_scalapack before -lscalapack).
if(TARGET tessera_scalapack)
  set_property(TARGET tessera_scalapack APPEND PROPERTY INSTALL_RPATH "$ORIGIN")
  install(TARGETS tessera_scalapack EXPORT tesseraTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/tessera-scalapack.pc.in
    ${PROJECT_BINARY_DIR}/package/tessera-scalapack.pc.in @ONLY)
  list(APPEND _tessera_pc_templates ${PROJECT_BINARY_DIR}/package/tessera-scalapack.pc.in)
endif()

# ---- share/tessera ----------------------------------------------------------------------------
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${TESSERA_INSTALL_DATADIR}/configs
  PATTERN tuned EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/tuned/ DESTINATION ${TESSERA_INSTALL_DATADIR}/tuned)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/scaling_report.py DESTINATION ${TESSERA_INSTALL_DATADIR}/scripts)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${TESSERA_INSTALL_DATADIR}/docs)
# README.md and LICENSE beside docs/ and slurm/, as in the repository: the links of README.md
# (docs/..., slurm/..., LICENSE), of docs/*.md (../slurm/...) and of slurm/README.md (../docs/...)
# work in the installed tree too. The license also goes where distributions look for it
# (CMAKE_INSTALL_DOCDIR: share/doc/tessera).
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${TESSERA_INSTALL_DATADIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The slurm scripts and tessera.pc name the prefix, known only at install time: written by
# cmake/TesseraInstallPrefixed.cmake then (also honours DESTDIR).
install(CODE "
  set(TESSERA_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
  set(TESSERA_STAGE_DIR \"${PROJECT_BINARY_DIR}/package/stage\")
  set(TESSERA_PC_TEMPLATE \"${_tessera_pc_templates}\")
  set(TESSERA_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(TESSERA_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(TESSERA_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(TESSERA_PC_SYSTEM_LIBDIRS \"${TESSERA_PC_SYSTEM_LIBDIRS}\")
  set(TESSERA_DATADIR \"${TESSERA_INSTALL_DATADIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/TesseraInstallPrefixed.cmake\")
")
