# Run by `cmake --install` (cmake/TesseraInstall.cmake's install(CODE)): writes the files that
# name the install prefix, which is known only now (cmake --install --prefix P overrides the
# configured one), into a stage folder, then installs them with file(INSTALL) (DESTDIR, the
# install manifest).
#
#   share/tessera/slurm/*.sbatch  source common.sh from the installed share/tessera by default
#   share/tessera/slurm/common.sh defaults TESSERA_HOME to share/tessera, TESSERA to bin/tessera
#   lib/pkgconfig/tessera.pc      prefix=P, and the run path -Wl,-rpath,P/lib (not for a system libdir)
#
# Inputs (set by the caller): TESSERA_SOURCE_DIR, TESSERA_STAGE_DIR, TESSERA_PC_TEMPLATE,
# TESSERA_BINDIR, TESSERA_LIBDIR, TESSERA_INCLUDEDIR, TESSERA_DATADIR (relative or absolute),
# TESSERA_PC_SYSTEM_LIBDIRS (the linker's own directories: no run path for them).

function(_tessera_full out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

# REPLACE that must happen: a script whose marker line changed is an error, not a silently
# uninstallable script.
function(_tessera_replace var file from to)
  string(FIND "${${var}}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "tessera install: '${from}' not found in ${file}; update cmake/TesseraInstallPrefixed.cmake")
  endif()
  string(REPLACE "${from}" "${to}" text "${${var}}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

_tessera_full(_home "${TESSERA_DATADIR}")
_tessera_full(_bindir "${TESSERA_BINDIR}")
_tessera_full(_libdir "${TESSERA_LIBDIR}")
file(REMOVE_RECURSE "${TESSERA_STAGE_DIR}")

# ---- the slurm scripts ------------------------------------------------------------------------
file(GLOB _scripts "${TESSERA_SOURCE_DIR}/slurm/*.sbatch")
set(_staged)
foreach(_script IN LISTS _scripts)
  get_filename_component(_name "${_script}" NAME)
  file(READ "${_script}" _text)
  _tessera_replace(_text "${_name}" [[source "${TESSERA_HOME:-${SLURM_SUBMIT_DIR:-.}}/slurm/common.sh"]]
                   "source \"\${TESSERA_HOME:-${_home}}/slurm/common.sh\"")
  file(WRITE "${TESSERA_STAGE_DIR}/slurm/${_name}" "${_text}")
  list(APPEND _staged "${TESSERA_STAGE_DIR}/slurm/${_name}")
endforeach()
file(READ "${TESSERA_SOURCE_DIR}/slurm/common.sh" _text)
_tessera_replace(_text common.sh "\nTESSERA_INSTALLED_HOME=\"\"\n" "\nTESSERA_INSTALLED_HOME=\"${_home}\"\n")
_tessera_replace(_text common.sh "\nTESSERA_INSTALLED_BINARY=\"\"\n" "\nTESSERA_INSTALLED_BINARY=\"${_bindir}/tessera\"\n")
file(WRITE "${TESSERA_STAGE_DIR}/slurm/common.sh" "${_text}")
file(INSTALL ${_staged} "${TESSERA_SOURCE_DIR}/slurm/README.md" "${TESSERA_STAGE_DIR}/slurm/common.sh"
     DESTINATION "${_home}/slurm")

# ---- tessera.pc (and tessera-scalapack.pc where libtessera_scalapack is built) -----------------
foreach(_pc_template IN LISTS TESSERA_PC_TEMPLATE)
get_filename_component(_pc_name "${_pc_template}" NAME)
string(REGEX REPLACE "\\.in$" "" _pc_name "${_pc_name}")
file(READ "${_pc_template}" _text)
string(REPLACE "@TESSERA_PC_PREFIX@" "${CMAKE_INSTALL_PREFIX}" _text "${_text}")
foreach(_d LIBDIR INCLUDEDIR)  # ${prefix}/lib where it is under the prefix (pkg-config --define-prefix)
  if(IS_ABSOLUTE "${TESSERA_${_d}}")
    string(REPLACE "@TESSERA_PC_${_d}@" "${TESSERA_${_d}}" _text "${_text}")
  else()
    string(REPLACE "@TESSERA_PC_${_d}@" "\${prefix}/${TESSERA_${_d}}" _text "${_text}")
  endif()
endforeach()
# The run path: libtessera's directory, unless the linker searches it by itself.
list(FIND TESSERA_PC_SYSTEM_LIBDIRS "${_libdir}" _system)
if(NOT _system EQUAL -1)
  string(REPLACE "@TESSERA_PC_RPATH@" "" _text "${_text}")
else()
  string(REPLACE "@TESSERA_PC_RPATH@" "-Wl,-rpath,\${libdir} " _text "${_text}")
endif()
file(WRITE "${TESSERA_STAGE_DIR}/pkgconfig/${_pc_name}" "${_text}")
file(INSTALL "${TESSERA_STAGE_DIR}/pkgconfig/${_pc_name}" DESTINATION "${_libdir}/pkgconfig")
endforeach()
