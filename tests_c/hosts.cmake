# hosts.cmake -- build the *host's ggml core* (everything llama.rn / whisper.rn
# compile from ggml except ggml-backend.cpp and ggml-backend-reg.cpp) as static
# libraries, from the npm packages extracted by scripts/fetch-hosts.sh.
#
# Inputs (set before include() or as cache variables):
#   GGML_RS_HOSTS_DIR    .cache/hosts (holds lm/package and wsp/package)
#   GGML_RS_INCLUDE_DIR  root of our headers (default ${PROJECT_SOURCE_DIR}/include);
#                        <root>/<prefix>/ggml-backend.h and ggml-backend-impl.h
#                        replace the host's own.
#   GGML_RS_HOST_CPU_FLAGS  extra SIMD flags for the core (auto-detected once
#                        from /proc/cpuinfo; override on the command line).
#
# Functions:
#   ggml_rs_stage_host(<lm|wsp>)
#       Copy package/cpp into ${CMAKE_BINARY_DIR}/hosts/<p>/cpp minus
#       ggml-backend.cpp, ggml-backend-reg.cpp, ggml-backend.h and
#       ggml-backend-impl.h. Sets in the caller's scope:
#         GGML_RS_<P>_STAGED_DIR           staged cpp/ dir
#         GGML_RS_<P>_STAGED_INCLUDE_DIRS  staged include dirs (without ours)
#         GGML_RS_<P>_INCLUDE_DIRS         include/<p> + staged include dirs,
#                                          in the order to use them
#   ggml_rs_add_host_core(<lm|wsp> <static|shared>)
#       -> STATIC library target <p>_core_<mode> (PIC), compiled from the staged
#          copy with include/<p> first on the include path. In shared mode
#          -D<P>_GGML_SHARED -D<P>_GGML_BACKEND_SHARED are added (PUBLIC).
#   ggml_rs_add_host_core_stock(<lm|wsp>)
#       -> STATIC library target <p>_core_stock: the unmodified host core,
#          including its own ggml-backend.cpp / ggml-backend-reg.cpp, compiled
#          straight from package/cpp with the host's own headers.
#          (EXCLUDE_FROM_ALL: only built when something links it.)
#
# Every core target carries PUBLIC include dirs (so a test that links it gets
# the right headers), INTERFACE link libs pthread/dl/m, and the custom target
# properties GGML_RS_PREFIX, GGML_RS_MODE and GGML_RS_INCLUDE_DIRS.

include_guard(GLOBAL)

if(NOT DEFINED GGML_RS_HOSTS_DIR)
  set(GGML_RS_HOSTS_DIR "${PROJECT_SOURCE_DIR}/.cache/hosts" CACHE PATH
      "Directory holding the extracted host packages (lm/package, wsp/package)")
endif()
if(NOT DEFINED GGML_RS_INCLUDE_DIR)
  set(GGML_RS_INCLUDE_DIR "${PROJECT_SOURCE_DIR}/include" CACHE PATH
      "Root of our replacement headers (<root>/lm, <root>/wsp)")
endif()

# ---------------------------------------------------------------------------
# CPU feature flags (configure time).
# ---------------------------------------------------------------------------
if(NOT DEFINED GGML_RS_HOST_CPU_FLAGS)
  set(_ggml_rs_cpu_flags "")
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|x64)$" AND EXISTS "/proc/cpuinfo")
    file(STRINGS "/proc/cpuinfo" _ggml_rs_cpuinfo_flags REGEX "^flags[ \t]*:" LIMIT_COUNT 1)
    set(_ggml_rs_cpuinfo_flags " ${_ggml_rs_cpuinfo_flags} ")
    if(_ggml_rs_cpuinfo_flags MATCHES " avx2 " AND
       _ggml_rs_cpuinfo_flags MATCHES " fma " AND
       _ggml_rs_cpuinfo_flags MATCHES " f16c ")
      set(_ggml_rs_cpu_flags -mavx2 -mfma -mf16c)
    endif()
  endif()
  set(GGML_RS_HOST_CPU_FLAGS "${_ggml_rs_cpu_flags}" CACHE STRING
      "Extra compiler flags for the host ggml cores (auto-detected from /proc/cpuinfo)")
  unset(_ggml_rs_cpu_flags)
  unset(_ggml_rs_cpuinfo_flags)
endif()
message(STATUS "ggml-backend-rs: host core CPU flags: '${GGML_RS_HOST_CPU_FLAGS}'")

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|x64|i.86)$")
  set(GGML_RS_HOST_ARCH "x86")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64|armv.*|arm)$")
  set(GGML_RS_HOST_ARCH "arm")
else()
  set(GGML_RS_HOST_ARCH "generic")
endif()

set(GGML_RS_BACKEND_FILES
    ggml-backend.cpp ggml-backend-reg.cpp ggml-backend.h ggml-backend-impl.h)

# ---------------------------------------------------------------------------
# Per-host source lists (relative to package/cpp), from
# package/android/src/main/CMakeLists.txt minus the backend files and minus the
# llama/whisper/JNI sources.
# ---------------------------------------------------------------------------
function(_ggml_rs_host_sources prefix out_sources out_defs out_std out_subdirs)
  if(prefix STREQUAL "lm")
    set(srcs
        ggml.c ggml-aarch64.c ggml-alloc.c ggml-cpu.c ggml-cpu.cpp
        ggml-cpu-aarch64.c ggml-cpu-quants.c ggml-opt.cpp ggml-threading.cpp
        ggml-quants.c sgemm.cpp)
    set(defs "")
    set(std 11)
    set(subdirs "")
  elseif(prefix STREQUAL "wsp")
    set(srcs
        ggml.c ggml-alloc.c
        ggml-cpu/amx/amx.cpp ggml-cpu/amx/mmq.cpp
        ggml-cpu/ggml-cpu.c ggml-cpu/ggml-cpu.cpp ggml-cpu/quants.c
        ggml-cpu/traits.cpp ggml-cpu/repack.cpp ggml-cpu/unary-ops.cpp
        ggml-cpu/binary-ops.cpp ggml-cpu/vec.cpp ggml-cpu/ops.cpp
        ggml-opt.cpp ggml-threading.cpp ggml-quants.c gguf.cpp)
    set(defs WSP_GGML_USE_CPU WSP_GGML_USE_CPU_REPACK)
    if(GGML_RS_HOST_ARCH STREQUAL "generic")
      list(APPEND defs WSP_GGML_CPU_GENERIC)
    else()
      list(APPEND srcs
           ggml-cpu/arch/${GGML_RS_HOST_ARCH}/quants.c
           ggml-cpu/arch/${GGML_RS_HOST_ARCH}/repack.cpp)
    endif()
    set(std 17)
    set(subdirs ggml-cpu)
  else()
    message(FATAL_ERROR "ggml-backend-rs: unknown host prefix '${prefix}' (expected lm or wsp)")
  endif()
  set(${out_sources} "${srcs}" PARENT_SCOPE)
  set(${out_defs} "${defs}" PARENT_SCOPE)
  set(${out_std} "${std}" PARENT_SCOPE)
  set(${out_subdirs} "${subdirs}" PARENT_SCOPE)
endfunction()

function(_ggml_rs_host_pkg_dir prefix out)
  set(dir "${GGML_RS_HOSTS_DIR}/${prefix}/package/cpp")
  if(NOT EXISTS "${dir}/ggml.h")
    message(FATAL_ERROR
      "ggml-backend-rs: host sources not found at ${dir}.\n"
      "Run scripts/fetch-hosts.sh first (or set GGML_RS_HOSTS_DIR).")
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

# Common flags for a core target.
function(_ggml_rs_core_flags target std defs)
  set_target_properties(${target} PROPERTIES
      POSITION_INDEPENDENT_CODE ON
      CXX_STANDARD ${std}
      CXX_STANDARD_REQUIRED ON
      CXX_EXTENSIONS ON)
  target_compile_options(${target} PRIVATE
      -O3 -pthread ${GGML_RS_HOST_CPU_FLAGS})
  target_compile_definitions(${target} PRIVATE
      NDEBUG ${defs} $<$<COMPILE_LANGUAGE:C>:_GNU_SOURCE>)
  target_link_libraries(${target} INTERFACE pthread dl m)
endfunction()

# ---------------------------------------------------------------------------
# Staging
# ---------------------------------------------------------------------------
function(ggml_rs_stage_host prefix)
  string(TOUPPER "${prefix}" P)
  _ggml_rs_host_pkg_dir(${prefix} src)
  _ggml_rs_host_sources(${prefix} _srcs _defs _std _subdirs)
  set(dst "${CMAKE_BINARY_DIR}/hosts/${prefix}/cpp")

  # Copy every C/C++ source and header (skip Metal / Obj-C / CoreML bits);
  # configure_file(COPYONLY) only rewrites changed files and re-runs CMake
  # when a source changes.
  file(GLOB_RECURSE files RELATIVE "${src}"
       "${src}/*.h" "${src}/*.hpp" "${src}/*.inc" "${src}/*.c" "${src}/*.cpp")
  foreach(f IN LISTS files)
    get_filename_component(name "${f}" NAME)
    if(name IN_LIST GGML_RS_BACKEND_FILES)
      continue()
    endif()
    configure_file("${src}/${f}" "${dst}/${f}" COPYONLY)
  endforeach()

  # Make sure no (stale) copy of a replaced file is reachable in the stage.
  file(GLOB_RECURSE maybe_stale "${dst}/ggml-backend*")
  foreach(x IN LISTS maybe_stale)
    get_filename_component(xn "${x}" NAME)
    if(xn IN_LIST GGML_RS_BACKEND_FILES)
      file(REMOVE "${x}")
    endif()
  endforeach()

  set(staged_inc "${dst}")
  foreach(sd IN LISTS _subdirs)
    list(APPEND staged_inc "${dst}/${sd}")
  endforeach()

  set(ours "${GGML_RS_INCLUDE_DIR}/${prefix}")
  foreach(h ggml-backend.h ggml-backend-impl.h)
    if(NOT EXISTS "${ours}/${h}")
      message(FATAL_ERROR
        "ggml-backend-rs: ${ours}/${h} is missing; it replaces the host's own "
        "${h} and is required to build the ${prefix} host core.")
    endif()
  endforeach()

  set(GGML_RS_${P}_STAGED_DIR "${dst}" PARENT_SCOPE)
  set(GGML_RS_${P}_STAGED_INCLUDE_DIRS "${staged_inc}" PARENT_SCOPE)
  set(GGML_RS_${P}_INCLUDE_DIRS "${ours};${staged_inc}" PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------------------
# Core built against our headers (static / shared link mode)
# ---------------------------------------------------------------------------
function(ggml_rs_add_host_core prefix mode)
  string(TOUPPER "${prefix}" P)
  if(NOT mode MATCHES "^(static|shared)$")
    message(FATAL_ERROR "ggml_rs_add_host_core: mode must be static or shared, got '${mode}'")
  endif()
  set(target ${prefix}_core_${mode})
  if(TARGET ${target})
    return()
  endif()

  ggml_rs_stage_host(${prefix})
  set(inc "${GGML_RS_${P}_INCLUDE_DIRS}")
  _ggml_rs_host_sources(${prefix} srcs defs std subdirs)
  list(TRANSFORM srcs PREPEND "${GGML_RS_${P}_STAGED_DIR}/")

  add_library(${target} STATIC ${srcs})
  _ggml_rs_core_flags(${target} ${std} "${defs}")
  target_include_directories(${target} BEFORE PUBLIC ${inc})
  if(mode STREQUAL "shared")
    target_compile_definitions(${target} PUBLIC
        ${P}_GGML_SHARED ${P}_GGML_BACKEND_SHARED)
  endif()
  set_target_properties(${target} PROPERTIES
      GGML_RS_PREFIX "${prefix}"
      GGML_RS_MODE "${mode}"
      GGML_RS_INCLUDE_DIRS "${inc}")

  # Forward the staging variables to the caller.
  set(GGML_RS_${P}_STAGED_DIR "${GGML_RS_${P}_STAGED_DIR}" PARENT_SCOPE)
  set(GGML_RS_${P}_STAGED_INCLUDE_DIRS "${GGML_RS_${P}_STAGED_INCLUDE_DIRS}" PARENT_SCOPE)
  set(GGML_RS_${P}_INCLUDE_DIRS "${inc}" PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------------------
# Stock core: the host exactly as shipped (with its own backend files).
# ---------------------------------------------------------------------------
function(ggml_rs_add_host_core_stock prefix)
  string(TOUPPER "${prefix}" P)
  set(target ${prefix}_core_stock)
  if(TARGET ${target})
    return()
  endif()
  _ggml_rs_host_pkg_dir(${prefix} src)
  _ggml_rs_host_sources(${prefix} srcs defs std subdirs)
  list(APPEND srcs ggml-backend.cpp ggml-backend-reg.cpp)
  list(TRANSFORM srcs PREPEND "${src}/")
  set(inc "${src}")
  foreach(sd IN LISTS subdirs)
    list(APPEND inc "${src}/${sd}")
  endforeach()

  add_library(${target} STATIC EXCLUDE_FROM_ALL ${srcs})
  _ggml_rs_core_flags(${target} ${std} "${defs}")
  target_include_directories(${target} PUBLIC ${inc})
  set_target_properties(${target} PROPERTIES
      GGML_RS_PREFIX "${prefix}"
      GGML_RS_MODE "stock"
      GGML_RS_INCLUDE_DIRS "${inc}")
  set(GGML_RS_${P}_STOCK_INCLUDE_DIRS "${inc}" PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------------------
# Core without ggml-cpu (ggml.c, ggml-alloc.c, quants, threading): a C program on this core and
# the library computes with the library's SIMD backend, which then is the CPU device.
# ---------------------------------------------------------------------------
function(ggml_rs_add_host_core_nocpu prefix)
  string(TOUPPER "${prefix}" P)
  set(target ${prefix}_core_nocpu)
  if(TARGET ${target})
    return()
  endif()
  ggml_rs_stage_host(${prefix})
  set(inc "${GGML_RS_${P}_INCLUDE_DIRS}")
  if(prefix STREQUAL "lm")
    set(srcs ggml.c ggml-aarch64.c ggml-alloc.c ggml-threading.cpp ggml-quants.c)
    set(std 11)
  else()
    set(srcs ggml.c ggml-alloc.c ggml-threading.cpp ggml-quants.c gguf.cpp)
    set(std 17)
  endif()
  list(TRANSFORM srcs PREPEND "${GGML_RS_${P}_STAGED_DIR}/")
  add_library(${target} STATIC ${srcs})
  _ggml_rs_core_flags(${target} ${std} "")
  target_include_directories(${target} BEFORE PUBLIC ${inc})
endfunction()

# ---------------------------------------------------------------------------
# ggml_rs_link_host(<exe> <core target> <static|shared|stock>): how an executable links a host
# core and (except stock) this library, in one place for every test, benchmark and driver.
#   static  core (whole archive) + libggml_backend_rs.a in one --start-group/--end-group (they
#           need each other: weak references from the library resolve to the core's objects)
#   shared  core (whole archive) + libggml_backend_rs.so; the executable exports its symbols
#           (-rdynamic) so the .so resolves the host's from it
#   stock   the core alone (it carries its own ggml-backend.cpp)
# ---------------------------------------------------------------------------
function(ggml_rs_link_host exe core mode)
  set_target_properties(${exe} PROPERTIES LINKER_LANGUAGE CXX)
  if(mode STREQUAL "static")
    target_link_libraries(${exe} PRIVATE
        -Wl,--start-group -Wl,--whole-archive ${core} -Wl,--no-whole-archive
        ggml_backend_rs::static -Wl,--end-group pthread dl m stdc++)
  elseif(mode STREQUAL "shared")
    target_link_libraries(${exe} PRIVATE
        -Wl,--whole-archive ${core} -Wl,--no-whole-archive ggml_backend_rs::shared pthread dl m stdc++)
    set_target_properties(${exe} PROPERTIES ENABLE_EXPORTS ON BUILD_RPATH "${GGML_RS_LIB_DIR}")
  elseif(mode STREQUAL "stock")
    target_link_libraries(${exe} PRIVATE
        -Wl,--whole-archive ${core} -Wl,--no-whole-archive pthread dl m stdc++)
    set_target_properties(${exe} PROPERTIES ENABLE_EXPORTS ON)
  else()
    message(FATAL_ERROR "ggml_rs_link_host: unknown mode '${mode}'")
  endif()
endfunction()
