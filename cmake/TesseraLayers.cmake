# One library target per layer, and include roots that let a layer see only what it links.
#
# Sources include headers by folder ("backend/backend.hpp", "comm/comm.hpp"). Were src/ itself on
# the include path, every folder would be visible to every target and an upward include (the
# backend including run/...) would compile. Instead each layer target gets an include root of
# its own under the build folder, holding one link: <folder> -> its sources. A target sees the
# roots of the targets it links (PUBLIC: theirs travel on to whoever links it), so it can include
# its own layer and those below it, and nothing above: an upward include fails to build with
# "No such file or directory".

# tessera_layer_root(<target> <INTERFACE|PUBLIC> <folder>): includes of "<name>/..." in and from
# <target> resolve to <folder> (an absolute path; <name> is its last component).
function(tessera_layer_root target scope folder)
  get_filename_component(_name "${folder}" NAME)
  set(_root "${PROJECT_BINARY_DIR}/layers/${target}")
  file(MAKE_DIRECTORY "${_root}")
  if(NOT IS_SYMLINK "${_root}/${_name}")
    file(CREATE_LINK "${folder}" "${_root}/${_name}" SYMBOLIC)
  endif()
  target_include_directories(${target} ${scope} "$<BUILD_INTERFACE:${_root}>")
endfunction()
