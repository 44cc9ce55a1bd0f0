# Who may link whom, checked when the build is configured: the runtime and
# the runtime-only runner link no LLVM or MLIR (a deployment installs them
# without a compiler), and the dialects link no runtime library (the IR
# describes programs; it never runs them). See docs/architecture.md.

# Collects the targets and libraries `target` links, transitively.
function(hetc_collect_links target out)
  set(seen "${${out}}")
  if(NOT TARGET ${target})
    return()
  endif()
  get_target_property(aliased ${target} ALIASED_TARGET)
  if(aliased)
    set(target ${aliased})
  endif()
  get_target_property(type ${target} TYPE)
  set(links)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(direct ${target} LINK_LIBRARIES)
    if(direct)
      list(APPEND links ${direct})
    endif()
  endif()
  get_target_property(interface ${target} INTERFACE_LINK_LIBRARIES)
  if(interface)
    list(APPEND links ${interface})
  endif()
  foreach(link IN LISTS links)
    # $<LINK_ONLY:x> and other generator expressions: keep the name inside.
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" link "${link}")
    if(link IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${link})
    hetc_collect_links(${link} seen)
  endforeach()
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

# Fails the configuration when `target` links anything matching `pattern`.
function(hetc_forbid_links target pattern why)
  set(links)
  hetc_collect_links(${target} links)
  foreach(link IN LISTS links)
    get_filename_component(name "${link}" NAME)
    if(name MATCHES "${pattern}")
      message(FATAL_ERROR "${target} links ${link}, but ${why}")
    endif()
  endforeach()
endfunction()

function(hetc_check_layering)
  foreach(target hetrt hetrt_core hetrt_format hetrt_tokenizer hetrt-run hetrt-synth
                 hetc_server)
    hetc_forbid_links(${target} "^(lib)?(MLIR|LLVM)"
      "the runtime must link neither LLVM nor MLIR")
  endforeach()
  # The server is built on the C API alone (libhetrt), as an embedder's is:
  # none of the runtime's internal libraries.
  get_target_property(server_links hetc_server LINK_LIBRARIES)
  foreach(link IN LISTS server_links)
    if(link MATCHES "^hetrt_")
      message(FATAL_ERROR "hetc_server links ${link}, but the server is built "
                          "on the C API (hetrt) only")
    endif()
  endforeach()
  foreach(target HetcLLMDialect HetcHetDialect)
    hetc_forbid_links(${target} "^(lib)?hetrt"
      "the dialects must link no runtime library")
  endforeach()
endfunction()
