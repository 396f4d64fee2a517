# hosts.cmake -- build the *host's ggml core* (everything llama.rn / whisper.rn
# compile from ggml except ggml-backend.cpp and ggml-backend-reg.cpp) as static
# libraries, from the npm packages extracted by scripts/fetch-hosts.sh.
#
# Hosts: a host name is lm or wsp (the package each C test of that prefix runs on) or lm12.
# Which package a name stands for depends on the revision selected for its prefix:
#   GGML_RS_REV2026_LM  OFF: lm = llama.rn 0.4.4 (.cache/hosts/lm)
#                       ON:  lm = cui-llama.rn 1.12.2 (.cache/hosts/cui),
#                            lm12 = llama.rn 0.12.9 (.cache/hosts/lm12), a second lm_ host
#   GGML_RS_REV2026_WSP OFF: wsp = whisper.rn 0.4.3 (.cache/hosts/wsp)
#                       ON:  wsp = whisper.rn 0.7.4 (.cache/hosts/wsp7)
# (both default to GGML_RS_REV2026). A 2026 host takes our headers from <include>/<prefix>-2026
# and keeps ggml-backend-dl.cpp and ggml-backend-meta.cpp (host code, see docs/revision-2026.md)
# unless GGML_RS_REV2026_LIB_META says the library defines the meta functions.
#
# Inputs (set before include() or as cache variables):
#   GGML_RS_HOSTS_DIR    .cache/hosts (holds <tag>/package for lm, wsp, cui, lm12, wsp7)
#   GGML_RS_INCLUDE_DIR  root of our headers (default ${PROJECT_SOURCE_DIR}/include);
#                        <root>/<prefix>/ggml-backend.h and ggml-backend-impl.h
#                        replace the host's own.
#   GGML_RS_HOST_CPU_FLAGS  extra SIMD flags for the core (auto-detected once
#                        from /proc/cpuinfo; override on the command line).
#
# Functions:
#   ggml_rs_host_ours_available(<host> <out-var>)
#       TRUE when our headers for the host's revision exist (include/<p>[-2026]/ggml-backend*.h).
#   ggml_rs_stage_host(<lm|wsp|lm12>)
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
option(GGML_RS_REV2026 "Host builds and C tests on the 2026 packages (cui-llama.rn 1.12.2, llama.rn 0.12.9, whisper.rn 0.7.4) for both prefixes" OFF)
option(GGML_RS_REV2026_LM "lm_ hosts/tests on the 2026 revision (cui-llama.rn 1.12.2 + llama.rn 0.12.9)" ${GGML_RS_REV2026})
option(GGML_RS_REV2026_WSP "wsp_ hosts/tests on the 2026 revision (whisper.rn 0.7.4)" ${GGML_RS_REV2026})
option(GGML_RS_PER_MODE_OBJECTS "Compile the ggml cores (and the 2024 hosts) once per link mode instead of once for static and shared" OFF)
set(GGML_RS_REV2026_LIB_META "auto" CACHE STRING
    "Does the library define the 8 ggml-backend-meta.cpp functions (then the 2026 hosts drop meta.cpp)? ON/OFF/auto (auto: nm the static library)")
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
# _ggml_rs_host_info(<host> <out-prefix> <out-pkg-tag> <out-rev2026>)
function(_ggml_rs_host_info host out_prefix out_pkg out_rev)
  if(host STREQUAL "lm")
    set(p lm)
    if(GGML_RS_REV2026_LM)
      set(tag cui)
      set(rev ON)
    else()
      set(tag lm)
      set(rev OFF)
    endif()
  elseif(host STREQUAL "wsp")
    set(p wsp)
    if(GGML_RS_REV2026_WSP)
      set(tag wsp7)
      set(rev ON)
    else()
      set(tag wsp)
      set(rev OFF)
    endif()
  elseif(host STREQUAL "lm12")
    set(p lm)
    set(tag lm12)
    set(rev ON)
  else()
    message(FATAL_ERROR "ggml-backend-rs: unknown host '${host}' (expected lm, wsp or lm12)")
  endif()
  set(${out_prefix} "${p}" PARENT_SCOPE)
  set(${out_pkg} "${tag}" PARENT_SCOPE)
  set(${out_rev} "${rev}" PARENT_SCOPE)
endfunction()

# Our header directory for a host: include/<p> (old revision) or include/<p>-2026.
function(_ggml_rs_host_ours_dir host out)
  _ggml_rs_host_info(${host} p tag rev)
  if(rev)
    set(${out} "${GGML_RS_INCLUDE_DIR}/${p}-2026" PARENT_SCOPE)
  else()
    set(${out} "${GGML_RS_INCLUDE_DIR}/${p}" PARENT_SCOPE)
  endif()
endfunction()

function(ggml_rs_host_ours_available host out)
  _ggml_rs_host_ours_dir(${host} ours)
  if(EXISTS "${ours}/ggml-backend.h" AND EXISTS "${ours}/ggml-backend-impl.h")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# Does the library define ggml-backend-meta.cpp's functions (for prefix p)? Then the 2026 host
# must not compile meta.cpp as well (duplicate definitions).
function(_ggml_rs_lib_has_meta p out)
  set(v "${GGML_RS_REV2026_LIB_META}")
  if(v STREQUAL "auto")
    set(v OFF)
    if(DEFINED GGML_RS_STATIC_LIB AND EXISTS "${GGML_RS_STATIC_LIB}")
      find_program(GGML_RS_NM NAMES nm llvm-nm)
      if(GGML_RS_NM)
        execute_process(COMMAND "${GGML_RS_NM}" -g --defined-only "${GGML_RS_STATIC_LIB}"
                        OUTPUT_VARIABLE syms ERROR_QUIET)
        if(syms MATCHES " T ${p}_ggml_backend_buffer_is_meta\n")
          set(v ON)
        endif()
      endif()
    endif()
  endif()
  set(${out} ${v} PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------------------
# Per-host source lists (relative to package/cpp), from
# package/android/src/main/CMakeLists.txt (llama.rn >= 0.12 / cui-llama.rn: its rnllama/
# CMakeLists.txt) minus the backend files and minus the llama/whisper/JNI sources.
# ---------------------------------------------------------------------------
function(_ggml_rs_host_sources host out_sources out_defs out_std out_subdirs)
  _ggml_rs_host_info(${host} prefix tag rev)
  _ggml_rs_host_pkg_dir(${host} pkgdir)
  if(tag STREQUAL "lm")
    set(srcs
        ggml.c ggml-aarch64.c ggml-alloc.c ggml-cpu.c ggml-cpu.cpp
        ggml-cpu-aarch64.c ggml-cpu-quants.c ggml-opt.cpp ggml-threading.cpp
        ggml-quants.c sgemm.cpp)
    set(defs "")
    set(std 11)
    set(subdirs "")
  elseif(tag STREQUAL "wsp")
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
  elseif(tag STREQUAL "cui" OR tag STREQUAL "lm12")
    # rnllama/CMakeLists.txt: the core ggml files + globbed ggml-cpu/*.c, *.cpp, amx/*.cpp
    set(srcs ggml.c ggml-alloc.c ggml-backend-dl.cpp ggml-backend-meta.cpp ggml-opt.cpp
        ggml-threading.cpp ggml-quants.c gguf.cpp)
    file(GLOB cpu RELATIVE "${pkgdir}" "${pkgdir}/ggml-cpu/*.c" "${pkgdir}/ggml-cpu/*.cpp"
         "${pkgdir}/ggml-cpu/amx/*.cpp")
    list(SORT cpu)
    list(APPEND srcs ${cpu})
    set(defs LM_GGML_USE_CPU LM_GGML_USE_CPU_REPACK)
    set(std 17)
    set(subdirs ggml-cpu)
  elseif(tag STREQUAL "wsp7")
    # whisper.rn 0.7.4 android/src/main/CMakeLists.txt
    set(srcs
        ggml.c ggml.cpp ggml-alloc.c ggml-backend-meta.cpp ggml-backend-dl.cpp
        ggml-cpu/amx/amx.cpp ggml-cpu/amx/mmq.cpp
        ggml-cpu/ggml-cpu.c ggml-cpu/ggml-cpu.cpp ggml-cpu/quants.c
        ggml-cpu/traits.cpp ggml-cpu/repack.cpp ggml-cpu/unary-ops.cpp
        ggml-cpu/binary-ops.cpp ggml-cpu/vec.cpp ggml-cpu/ops.cpp
        ggml-opt.cpp ggml-threading.cpp ggml-quants.c gguf.cpp)
    set(defs WSP_GGML_USE_CPU WSP_GGML_USE_CPU_REPACK)
    set(std 17)
    set(subdirs ggml-cpu)
  endif()
  if(rev)
    string(TOUPPER "${prefix}" P)
    if(GGML_RS_HOST_ARCH STREQUAL "generic")
      list(APPEND defs ${P}_GGML_CPU_GENERIC)
    else()
      list(APPEND srcs
           ggml-cpu/arch/${GGML_RS_HOST_ARCH}/quants.c
           ggml-cpu/arch/${GGML_RS_HOST_ARCH}/repack.cpp)
    endif()
  endif()
  set(${out_sources} "${srcs}" PARENT_SCOPE)
  set(${out_defs} "${defs}" PARENT_SCOPE)
  set(${out_std} "${std}" PARENT_SCOPE)
  set(${out_subdirs} "${subdirs}" PARENT_SCOPE)
endfunction()

# The files our layer replaces for a host (never compiled into, nor reachable from, an "ours" core).
function(_ggml_rs_host_replaced host out)
  _ggml_rs_host_info(${host} p tag rev)
  set(files ${GGML_RS_BACKEND_FILES})
  if(rev)
    _ggml_rs_lib_has_meta(${p} has_meta)
    if(has_meta)
      list(APPEND files ggml-backend-meta.cpp)
    endif()
  endif()
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

function(_ggml_rs_host_pkg_dir host out)
  _ggml_rs_host_info(${host} p tag rev)
  set(dir "${GGML_RS_HOSTS_DIR}/${tag}/package/cpp")
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
  # every C test / driver linking a 2026 core is compiled for that revision (test_prefix.h)
  get_target_property(host ${target} GGML_RS_HOST)
  if(host)
    _ggml_rs_host_info(${host} p tag rev)
    if(rev)
      target_compile_definitions(${target} INTERFACE TEST_REV2026=1)
    endif()
  endif()
endfunction()

# ---------------------------------------------------------------------------
# Staging
# ---------------------------------------------------------------------------
function(ggml_rs_stage_host host)
  string(TOUPPER "${host}" P)
  _ggml_rs_host_pkg_dir(${host} src)
  _ggml_rs_host_sources(${host} _srcs _defs _std _subdirs)
  _ggml_rs_host_replaced(${host} replaced)
  _ggml_rs_host_info(${host} prefix tag rev)
  set(dst "${CMAKE_BINARY_DIR}/hosts/${host}/cpp")

  # Copy every C/C++ source and header (skip Metal / Obj-C / CoreML bits);
  # configure_file(COPYONLY) only rewrites changed files and re-runs CMake
  # when a source changes.
  file(GLOB_RECURSE files RELATIVE "${src}"
       "${src}/*.h" "${src}/*.hpp" "${src}/*.inc" "${src}/*.c" "${src}/*.cpp")
  foreach(f IN LISTS files)
    get_filename_component(name "${f}" NAME)
    if(name IN_LIST replaced)
      continue()
    endif()
    configure_file("${src}/${f}" "${dst}/${f}" COPYONLY)
  endforeach()

  # Make sure no (stale) copy of a replaced file is reachable in the stage.
  file(GLOB_RECURSE maybe_stale "${dst}/ggml-backend*")
  foreach(x IN LISTS maybe_stale)
    get_filename_component(xn "${x}" NAME)
    if(xn IN_LIST replaced)
      file(REMOVE "${x}")
    endif()
  endforeach()

  set(staged_inc "${dst}")
  foreach(sd IN LISTS _subdirs)
    list(APPEND staged_inc "${dst}/${sd}")
  endforeach()

  _ggml_rs_host_ours_dir(${host} ours)
  foreach(h ggml-backend.h ggml-backend-impl.h)
    if(NOT EXISTS "${ours}/${h}")
      message(FATAL_ERROR
        "ggml-backend-rs: ${ours}/${h} is missing; it replaces the host's own "
        "${h} and is required to build the ${host} host core (${tag}).")
    endif()
  endforeach()

  set(GGML_RS_${P}_STAGED_DIR "${dst}" PARENT_SCOPE)
  set(GGML_RS_${P}_STAGED_INCLUDE_DIRS "${staged_inc}" PARENT_SCOPE)
  set(GGML_RS_${P}_INCLUDE_DIRS "${ours};${staged_inc}" PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------------------
# Core built against our headers (static / shared link mode)
# ---------------------------------------------------------------------------
function(ggml_rs_add_host_core host mode)
  string(TOUPPER "${host}" H)
  _ggml_rs_host_info(${host} prefix tag rev)
  string(TOUPPER "${prefix}" P)
  if(NOT mode MATCHES "^(static|shared)$")
    message(FATAL_ERROR "ggml_rs_add_host_core: mode must be static or shared, got '${mode}'")
  endif()
  set(target ${host}_core_${mode})
  if(TARGET ${target})
    return()
  endif()

  ggml_rs_stage_host(${host})
  set(inc "${GGML_RS_${H}_INCLUDE_DIRS}")
  _ggml_rs_host_sources(${host} srcs defs std subdirs)
  _ggml_rs_host_replaced(${host} replaced)
  foreach(r IN LISTS replaced)
    list(REMOVE_ITEM srcs ${r})
  endforeach()
  list(TRANSFORM srcs PREPEND "${GGML_RS_${H}_STAGED_DIR}/")

  # The core's objects are compiled once for both link modes (position-independent, as a shared
  # library needs): what tells the modes apart is the link (ggml_rs_link_host) and the *_SHARED
  # defines, which on ELF targets change no code (default visibility either way; they matter for
  # Windows DLLs). The shared core hands them to what links it: the tests and drivers compiled
  # against it see the shared build's headers. -DGGML_RS_PER_MODE_OBJECTS=ON compiles per mode.
  set(objs ${host}_core_objects)
  if(GGML_RS_PER_MODE_OBJECTS)
    set(objs ${target}_objects)
  endif()
  if(NOT TARGET ${objs})
    add_library(${objs} OBJECT ${srcs})
    set_target_properties(${objs} PROPERTIES GGML_RS_HOST "${host}")
    _ggml_rs_core_flags(${objs} ${std} "${defs}")
    target_include_directories(${objs} BEFORE PRIVATE ${inc})
    if(GGML_RS_PER_MODE_OBJECTS AND mode STREQUAL "shared")
      target_compile_definitions(${objs} PRIVATE ${P}_GGML_SHARED ${P}_GGML_BACKEND_SHARED)
    endif()
  endif()
  add_library(${target} STATIC $<TARGET_OBJECTS:${objs}>)
  set_target_properties(${target} PROPERTIES GGML_RS_HOST "${host}" LINKER_LANGUAGE CXX GGML_RS_OBJECTS ${objs})
  target_include_directories(${target} BEFORE INTERFACE ${inc})
  target_link_libraries(${target} INTERFACE pthread dl m)
  if(rev)
    target_compile_definitions(${target} INTERFACE TEST_REV2026=1)
  endif()
  if(mode STREQUAL "shared")
    target_compile_definitions(${target} INTERFACE
        ${P}_GGML_SHARED ${P}_GGML_BACKEND_SHARED)
  endif()
  set_target_properties(${target} PROPERTIES
      GGML_RS_PREFIX "${prefix}"
      GGML_RS_MODE "${mode}"
      GGML_RS_INCLUDE_DIRS "${inc}")

  # Forward the staging variables to the caller.
  set(GGML_RS_${H}_STAGED_DIR "${GGML_RS_${H}_STAGED_DIR}" PARENT_SCOPE)
  set(GGML_RS_${H}_STAGED_INCLUDE_DIRS "${GGML_RS_${H}_STAGED_INCLUDE_DIRS}" PARENT_SCOPE)
  set(GGML_RS_${H}_INCLUDE_DIRS "${inc}" PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------------------
# Stock core: the host exactly as shipped (with its own backend files).
# ---------------------------------------------------------------------------
function(ggml_rs_add_host_core_stock host)
  string(TOUPPER "${host}" P)
  _ggml_rs_host_info(${host} prefix tag rev)
  set(target ${host}_core_stock)
  if(TARGET ${target})
    return()
  endif()
  _ggml_rs_host_pkg_dir(${host} src)
  _ggml_rs_host_sources(${host} srcs defs std subdirs)
  list(APPEND srcs ggml-backend.cpp ggml-backend-reg.cpp)
  list(TRANSFORM srcs PREPEND "${src}/")
  set(inc "${src}")
  foreach(sd IN LISTS subdirs)
    list(APPEND inc "${src}/${sd}")
  endforeach()

  add_library(${target} STATIC EXCLUDE_FROM_ALL ${srcs})
  set_target_properties(${target} PROPERTIES GGML_RS_HOST "${host}")
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
function(ggml_rs_add_host_core_nocpu host)
  string(TOUPPER "${host}" P)
  _ggml_rs_host_info(${host} prefix tag rev)
  set(target ${host}_core_nocpu)
  if(TARGET ${target})
    return()
  endif()
  ggml_rs_stage_host(${host})
  set(inc "${GGML_RS_${P}_INCLUDE_DIRS}")
  _ggml_rs_host_replaced(${host} replaced)
  if(rev)
    # 2026: ggml core without ggml-cpu (meta.cpp unless the library has it; dl.cpp is unused;
    # ggml-opt.cpp, which llama.cpp's training API links, on the backend API only)
    set(srcs ggml.c ggml-alloc.c ggml-threading.cpp ggml-quants.c gguf.cpp ggml-opt.cpp)
    if(tag STREQUAL "wsp7")
      list(APPEND srcs ggml.cpp)
    endif()
    if(NOT "ggml-backend-meta.cpp" IN_LIST replaced)
      list(APPEND srcs ggml-backend-meta.cpp)
    endif()
    set(std 17)
  elseif(prefix STREQUAL "lm")
    set(srcs ggml.c ggml-aarch64.c ggml-alloc.c ggml-threading.cpp ggml-quants.c)
    set(std 11)
  else()
    set(srcs ggml.c ggml-alloc.c ggml-threading.cpp ggml-quants.c gguf.cpp)
    set(std 17)
  endif()
  list(TRANSFORM srcs PREPEND "${GGML_RS_${P}_STAGED_DIR}/")
  add_library(${target} STATIC ${srcs})
  set_target_properties(${target} PROPERTIES GGML_RS_HOST "${host}")
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
