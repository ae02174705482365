# subnetd_module(NAME DIRS <dirs...> DEPS <targets...>)
# One static library per top-level module. Sources are globbed per directory so a
# new file pair is picked up without editing CMake; main() files live in *_main.cpp
# and are excluded (each binary is declared explicitly).
function(subnetd_module name)
  cmake_parse_arguments(M "" "" "DIRS;DEPS" ${ARGN})
  set(srcs)
  foreach(d IN LISTS M_DIRS)
    file(GLOB s CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${d}/*.cpp)
    list(APPEND srcs ${s})
  endforeach()
  list(FILTER srcs EXCLUDE REGEX "_main\\.cpp$")
  if(NOT srcs)
    # Header-only so far.
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
    target_link_libraries(${name} INTERFACE ${M_DEPS})
    return()
  endif()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  target_compile_options(${name} PRIVATE ${SUBNETD_WARNINGS})
  target_link_libraries(${name} PUBLIC ${M_DEPS})
endfunction()
