# Upstream llama.cpp / ggml built by its own CMake with ggml-backend-rs in place of ggml's backend
# layer (ggml-backend.cpp, ggml-backend-reg.cpp). One option on the llama.cpp (or ggml) configure line:
#
#   cargo build --release --features ggml-0253          # in ggml-backend-rs: the layer of ggml 0.25.3
#   cmake -S llama.cpp -B build -DBUILD_SHARED_LIBS=OFF \
#         -DCMAKE_PROJECT_INCLUDE=<ggml-backend-rs>/cmake/ggml-rs-upstream.cmake
#   cmake --build build --target llama-cli llama-completion llama-server llama-perplexity ggml-rpc-server
#
# What it does, once ggml's own CMakeLists have defined their targets (a deferred call at the end of
# the top-level directory):
#   - takes ggml-backend.cpp out of ggml-base's sources and ggml-backend-reg.cpp out of ggml's, and
#     links the library to ggml-base (PUBLIC), with no linker flag: the link anchors of our
#     ggml-backend.h keep the CPU / RPC registrations that only ggml-backend-reg.cpp named;
#   - puts the library's ggml-backend.h and ggml-backend-impl.h in place of the tree's (quoted
#     includes look beside the including file first, so an include path cannot do it); the tree's
#     own are kept beside them as *.stock, and a re-run is a no-op;
#   - picks those headers by the tree's ggml version: 0.25.3 (llama-cpp-python 0.3.36) ->
#     include/ggml-0.25.3, 0.24.0 (llama.cpp b11118, llama.rn 0.13) -> include/ggml-b11118, 0.20.0
#     (llama-cpp-python 0.3.35) -> include/ggml-2026; another version is an error that says so.
#     The library must be built with the matching feature (ggml-0253, ggml-b11118, ggml-2026).
#   - with -DGGML_BACKEND_DIR=<dir> (upstream's option), compiles that folder into libggml for the
#     library's loader, which searches it first as stock does.
# Options (cache variables):
#   GGML_RS_LIB   the library to link (default: <ggml-backend-rs>/target/release/
#                 libggml_backend_rs.a, or .so with BUILD_SHARED_LIBS=ON)
include_guard(GLOBAL)
if (CMAKE_VERSION VERSION_LESS 3.19)
    message(FATAL_ERROR "ggml-rs: cmake/ggml-rs-upstream.cmake needs CMake 3.19 (cmake_language DEFER)")
endif()

set(GGML_RS_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." CACHE PATH "ggml-backend-rs checkout")
cmake_path(NORMAL_PATH GGML_RS_ROOT)
if (BUILD_SHARED_LIBS)
    set(_ggml_rs_default_lib "${GGML_RS_ROOT}/target/release/libggml_backend_rs.so")
else()
    set(_ggml_rs_default_lib "${GGML_RS_ROOT}/target/release/libggml_backend_rs.a")
endif()
set(GGML_RS_LIB "${_ggml_rs_default_lib}" CACHE FILEPATH "libggml_backend_rs.a / .so built with the tree's ggml feature")

function(_ggml_rs_replace_backend_layer)
    if (NOT TARGET ggml-base OR NOT TARGET ggml)
        message(FATAL_ERROR "ggml-rs: no ggml-base / ggml target in this project: CMAKE_PROJECT_INCLUDE must be given to a llama.cpp or ggml configure")
    endif()
    get_target_property(src_dir ggml-base SOURCE_DIR)   # <ggml>/src
    cmake_path(GET src_dir PARENT_PATH ggml_dir)

    # the headers of the tree's ggml version
    file(STRINGS "${ggml_dir}/CMakeLists.txt" v REGEX "^set\\(GGML_VERSION_(MAJOR|MINOR|PATCH) [0-9]+\\)")
    string(REGEX REPLACE "[^;]*GGML_VERSION_[A-Z]+ ([0-9]+)\\)" "\\1" v "${v}")
    list(JOIN v "." version)
    if (version STREQUAL "0.25.3")
        set(headers ggml-0.25.3)
    elseif (version STREQUAL "0.24.0")
        set(headers ggml-b11118)
    elseif (version STREQUAL "0.20.0")
        set(headers ggml-2026)
    else()
        message(FATAL_ERROR "ggml-rs: ${ggml_dir} is ggml ${version}; the library serves ggml 0.25.3, 0.24.0 (b11118) and 0.20.0 (see docs/upstream.md)")
    endif()
    foreach(pair "include/ggml-backend.h;ggml-backend.h" "src/ggml-backend-impl.h;ggml-backend-impl.h")
        list(GET pair 0 tree_file)
        list(GET pair 1 ours)
        set(tree_file "${ggml_dir}/${tree_file}")
        set(ours "${GGML_RS_ROOT}/include/${headers}/${ours}")
        file(SHA256 "${tree_file}" have)
        file(SHA256 "${ours}" want)
        if (NOT have STREQUAL want)
            if (NOT EXISTS "${tree_file}.stock")
                file(COPY_FILE "${tree_file}" "${tree_file}.stock")
            endif()
            file(COPY_FILE "${ours}" "${tree_file}")
            message(STATUS "ggml-rs: ${tree_file} <- include/${headers} (the tree's own kept as .stock)")
        endif()
    endforeach()

    # the two files the library replaces leave the targets
    foreach(pair "ggml-base;ggml-backend.cpp" "ggml;ggml-backend-reg.cpp")
        list(GET pair 0 target)
        list(GET pair 1 file)
        get_target_property(srcs ${target} SOURCES)
        get_target_property(dir ${target} SOURCE_DIR)
        set(kept "")
        foreach(s IN LISTS srcs)
            cmake_path(GET s FILENAME name)
            if (NOT name STREQUAL file)
                cmake_path(ABSOLUTE_PATH s BASE_DIRECTORY "${dir}")
                list(APPEND kept "${s}")
            endif()
        endforeach()
        set_property(TARGET ${target} PROPERTY SOURCES "${kept}")
    endforeach()

    if (NOT EXISTS "${GGML_RS_LIB}")
        message(FATAL_ERROR "ggml-rs: GGML_RS_LIB=${GGML_RS_LIB} does not exist; build it with `cargo build --release --features <ggml-0253|ggml-b11118|ggml-2026>` (ggml ${version} wants include/${headers}'s)")
    endif()
    # the library and ggml's core need each other (ggml_init, ggml-alloc, the logger): weak
    # references on the library's side, so one link order serves static and shared
    find_package(Threads REQUIRED)
    target_link_libraries(ggml-base PUBLIC "${GGML_RS_LIB}" ${CMAKE_DL_LIBS} m Threads::Threads)
    message(STATUS "ggml-rs: ggml ${version}: ggml-backend.cpp and ggml-backend-reg.cpp replaced by ${GGML_RS_LIB}")

    # a shared libggml without GGML_BACKEND_DL links its backends (ggml-cpu, ggml-vulkan, ...) but,
    # ggml-backend-reg.cpp gone, names none of them: a linker defaulting to --as-needed would drop
    # them from its NEEDED list, and a program built on stock's libllama (which names no backend)
    # would then find only what the library brings. Kept, so loading libggml loads them, and the
    # library's weak references to their registration functions resolve, as stock's named ones do.
    if (BUILD_SHARED_LIBS AND NOT GGML_BACKEND_DL)
        target_link_options(ggml PRIVATE "LINKER:--no-as-needed")
    endif()

    # -DGGML_BACKEND_DIR=<dir> (a distribution's module folder, searched first by load_all): stock
    # compiles it into ggml-backend-reg.cpp; the library is built before the option is known, so
    # the folder goes into libggml as a string its loader looks up (src/dl.rs)
    if (GGML_BACKEND_DIR)
        set(dir_src "${CMAKE_BINARY_DIR}/ggml-rs-backend-dir.c")
        file(WRITE "${dir_src}" "/* ggml-rs-upstream.cmake: GGML_BACKEND_DIR for ggml-backend-rs's loader */\n__attribute__((visibility(\"default\"))) const char ggml_rs_backend_dir[] = GGML_BACKEND_DIR;\n")
        target_sources(ggml PRIVATE "${dir_src}")
    endif()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ggml_rs_replace_backend_layer)
