# cui-llama.rn 1.12.2 with its ggml core compiled with fast math, as the package's own builds
# compile it (x86: -ffast-math -fno-finite-math-only on top of the AVX2 flags; its arm64 builds use
# clang's -ffp-model=fast -fno-finite-math-only), stock and on the library (static): the SIMD
# backend's contract on such a host (src/simd/fidelity.rs).
#   llama_driver_fastmath_stock / _static   the drivers: the llama.cpp objects and driver halves of
#                                            the plain build, the cores lm_core_fastmath_<mode>
#   host_cui_llama_fastmath_simd             GGML_RS_SIMD=1: the bounded contract in force (its log
#                                            line), every node on SIMD but what it declines, and the
#                                            whole output bit-identical to the stock build compiled
#                                            WITHOUT fast math: SIMD computes in C's order whatever
#                                            the host's flags (the fast-math stock build is as far
#                                            from either: prompt logits NMSE 1.3e-2)
#   host_cui_llama_fastmath_exact            GGML_RS_SIMD_EXACT=1: the exact contract (products and
#                                            attention, and the kinds the check finds reordered, stay
#                                            with ggml-cpu), whole output bit-identical to this
#                                            fast-math build's own ggml-cpu (the driver without SIMD)
# Included by CMakeLists.txt for the 2026 lm_ host with the AVX2 flags and the static mode.
set(GGML_RS_FAST_MATH_FLAGS "-ffast-math;-fno-finite-math-only" CACHE STRING
    "Flags added to the fast-math variant of the 2026 lm_ core (cui-llama.rn's own)")

# _ggml_rs_core_variant(<base core> <new core> <flags>): the base core's sources and settings,
# compiled with <flags> added
function(_ggml_rs_core_variant base variant flags)
  # a core archived from an object library shared by the link modes (tests_c/hosts.cmake) takes
  # its sources and compile settings from that object library, its usage requirements from itself
  get_target_property(objs ${base} GGML_RS_OBJECTS)
  set(compiled ${base})
  if(objs)
    set(compiled ${objs})
  endif()
  get_target_property(srcs ${compiled} SOURCES)
  add_library(${variant} STATIC EXCLUDE_FROM_ALL ${srcs})
  foreach(prop COMPILE_OPTIONS COMPILE_DEFINITIONS INCLUDE_DIRECTORIES POSITION_INDEPENDENT_CODE
               CXX_STANDARD CXX_STANDARD_REQUIRED CXX_EXTENSIONS)
    get_target_property(v ${compiled} ${prop})
    if(v)
      set_target_properties(${variant} PROPERTIES ${prop} "${v}")
    endif()
  endforeach()
  foreach(prop INTERFACE_COMPILE_DEFINITIONS INTERFACE_INCLUDE_DIRECTORIES INTERFACE_LINK_LIBRARIES
               GGML_RS_HOST GGML_RS_PREFIX GGML_RS_MODE GGML_RS_INCLUDE_DIRS)
    get_target_property(v ${base} ${prop})
    if(v)
      set_target_properties(${variant} PROPERTIES ${prop} "${v}")
    endif()
  endforeach()
  target_compile_options(${variant} PRIVATE ${flags})
endfunction()

foreach(_fm_mode stock static)
  _ggml_rs_core_variant(lm_core_${_fm_mode} lm_core_fastmath_${_fm_mode} "${GGML_RS_FAST_MATH_FLAGS}")
  set(_fm_exe llama_driver_fastmath_${_fm_mode})
  ggml_rs_host_objects(lm ${_fm_mode} _fm_host)
  add_executable(${_fm_exe} llama_driver.cpp
      $<TARGET_OBJECTS:llama_run_${_fm_mode}> $<TARGET_OBJECTS:${_fm_host}>)
  set_target_properties(${_fm_exe} PROPERTIES LINKER_LANGUAGE CXX CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_compile_options(${_fm_exe} PRIVATE -O2 -pthread)
  target_compile_definitions(${_fm_exe} PRIVATE GGML_RS_HOST_MODE="${_fm_mode}"
      $<TARGET_PROPERTY:lm_core_${_fm_mode},INTERFACE_COMPILE_DEFINITIONS>)
  target_include_directories(${_fm_exe} BEFORE PRIVATE
      $<TARGET_PROPERTY:lm_core_${_fm_mode},INTERFACE_INCLUDE_DIRECTORIES>)
  ggml_rs_link_host(${_fm_exe} lm_core_fastmath_${_fm_mode} ${_fm_mode})
endforeach()

set(_fm_args -m "${GGML_RS_LLAMA_MODEL}" -p 100 -n 48)
add_test(NAME host_cui_llama_fastmath_simd
    COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/run-simd.sh" llama "${_out}/cui_llama_fastmath_simd"
            "$<TARGET_FILE:llama_driver_stock>" "$<TARGET_FILE:llama_driver_fastmath_static>"
            -- ${_fm_args})
# (the exact contract's reference is this build's own ggml-cpu: the same fast-math driver without
# SIMD, which the backend layer's identity tests equate with stock's; llama_driver_fastmath_stock
# stays for the benches and the whole 2026 stage, and the bounded one need not compile its core)
add_test(NAME host_cui_llama_fastmath_exact
    COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/run-simd.sh" llama "${_out}/cui_llama_fastmath_exact"
            "$<TARGET_FILE:llama_driver_fastmath_static>" "$<TARGET_FILE:llama_driver_fastmath_static>"
            -- ${_fm_args})
set_tests_properties(host_cui_llama_fastmath_simd PROPERTIES
    ENVIRONMENT "GGML_RS_SIMD_BITWISE=1;GGML_RS_SIMD_EXPECT_LOG=^SIMD: contract: within ggml's error bounds of ggml-cpu \\(host compiled with fast math"
    TIMEOUT 900 LABELS "host;simd;static;fastmath" RUN_SERIAL TRUE)
set_tests_properties(host_cui_llama_fastmath_exact PROPERTIES
    ENVIRONMENT "GGML_RS_SIMD_EXACT=1;GGML_RS_SIMD_BITWISE=1;GGML_RS_SIMD_DECLINED=MUL_MAT,MUL,RMS_NORM,FLASH_ATTN;GGML_RS_SIMD_EXPECT_LOG=^SIMD: contract: bit-identical to ggml-cpu \\(GGML_RS_SIMD_EXACT=1; host compiled with fast math"
    TIMEOUT 900 LABELS "host;simd;static;fastmath" RUN_SERIAL TRUE)
unset(_fm_mode)
unset(_fm_exe)
unset(_fm_host)
unset(_fm_args)
