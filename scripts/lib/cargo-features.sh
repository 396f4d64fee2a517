# cargo_features_build <features> <out dir> [cargo args...]: the library with <features> (beside
# its defaults), built in the one target dir the stages' feature builds share (target/features:
# the build script's cbindgen with its dependencies and the kernels crate compile once for the
# 2026, ggml 0.25.3 and b11118 builds, about 20-40 s each of a cold test command saved), then its
# archive and shared library copied into <out dir>/release/, where the stage and its CMake builds
# read them (the next feature build overwrites target/features/release/; a copy is replaced by a
# rename, so a program still running on the old one keeps its file). Needs ROOT.
cargo_features_build() {
  local features="$1" out="$2" f
  shift 2
  CARGO_TARGET_DIR="$ROOT/target/features" cargo build --release --features "$features" "$@" || return 1
  mkdir -p "$out/release"
  for f in libggml_backend_rs.a libggml_backend_rs.so; do
    if ! cmp -s "$ROOT/target/features/release/$f" "$out/release/$f"; then
      cp "$ROOT/target/features/release/$f" "$out/release/.$f.tmp" && mv -f "$out/release/.$f.tmp" "$out/release/$f" || return 1
    fi
  done
}
