#!/bin/sh
# Compiler launcher for test-integrate.sh's Linux build of a patched package: appends -O0 after the
# package's own -O3 (its CMakeLists.txt sets it per target). That build checks what is compiled and
# how it links (every library target, -Wl,--no-undefined, against this library), not how fast it
# runs (nothing runs it), and -O0 compiles it in about a third of the time (GGML_RS_INTEGRATE_O3=1
# keeps the package's -O3).
exec "$@" -O0
