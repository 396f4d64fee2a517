# shellcheck shell=bash
# Provisioning shared by every command of the project: installs what the named parts need and
# nothing that is already there, so a second run only checks (about a second).
#
#   source scripts/provision.sh PART...    (from a script: PATH changes reach the caller)
#   bash scripts/provision.sh PART...      (by hand)
#
# PARTS
#   build    C/C++ compiler, make, tar/gzip/curl, python3 + pip, numpy (pip), cmake + ninja (pip),
#            Rust (rustup, when cargo is missing)
#   hosts    npm (only while .cache/npm lacks the two host tarballs)
#   speech   espeak-ng (speaks the sentences), sox (converts a user's recording to 16 kHz mono)
#   test     valgrind, clang + its libFuzzer/ASan runtime, llvm-symbolizer, a JDK's jni.h, ruby, file,
#            libc++ headers, aarch64 libc headers, rustup's rust-src (scripts/test.sh's valgrind,
#            fuzz, ThreadSanitizer, integrate and size stages)
#   aarch64  qemu-user, gcc-aarch64-linux-gnu, rustup target aarch64-unknown-linux-gnu
#   cross    clang, file, the four phone rustup targets, rustup's llvm-tools and rust-src
#   all      everything above (.ci/run)
# Debian packages go through apt-get when running as root (or with password-less sudo); otherwise
# one line names the missing packages and the command stops. aarch64 and cross are best effort:
# what cannot be installed is reported, and the scripts of those stages say SKIPPED or build std
# from rust-src as they always did. Each install step prints one line, then its elapsed time.
# env: GGML_RS_PROVISION=0 skips all of it (you manage the machine yourself).

prov_t0=$SECONDS
prov_ran=0          # something was installed: say so at the end
prov_apt_updated=0

prov_log() { echo "provision: $*"; }
# prov_step <what> <command...>: one progress line per long step, with its elapsed time
prov_step() {
  local what="$1" t=$SECONDS rc=0
  shift
  prov_log "$what ..."
  "$@" || rc=$?
  if ((rc == 0)); then prov_log "$what: done ($((SECONDS - t)) s)"; else prov_log "$what: FAILED ($((SECONDS - t)) s)"; fi
  prov_ran=1
  return $rc
}

prov_sudo=""
prov_can_apt() {
  if [[ "$(id -u)" -eq 0 ]]; then prov_sudo=""; return 0; fi
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then prov_sudo="sudo"; return 0; fi
  return 1
}

# apt's own output goes to a log shown only on failure; waits for another apt-get (a lock) up to 10 min
prov_apt_get() {
  local log rc=0
  log="$(mktemp)"
  if ((prov_apt_updated == 0)); then
    DEBIAN_FRONTEND=noninteractive $prov_sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >"$log" 2>&1 || rc=$?
    ((rc == 0)) && prov_apt_updated=1
  fi
  ((rc == 0)) && { DEBIAN_FRONTEND=noninteractive $prov_sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "$@" >>"$log" 2>&1 || rc=$?; }
  ((rc == 0)) || tail -n 20 "$log" >&2
  rm -f "$log"
  return $rc
}

# prov_apt <required:1|0> <package...>: install the missing Debian packages
prov_apt() {
  local required="$1"
  shift
  (($#)) || return 0
  if ! command -v apt-get >/dev/null 2>&1 || ! prov_can_apt; then
    prov_log "missing: $* -- install them as root: apt-get install $*" >&2
    ((required)) && return 1
    return 0
  fi
  if ! prov_step "apt-get install $*" prov_apt_get "$@"; then
    ((required)) && return 1
  fi
  return 0
}

prov_pip() { # <package...>
  python3 -m pip install -q "$@" 2>/dev/null ||
    python3 -m pip install -q --user --break-system-packages "$@"
}

prov_have() { command -v "$1" >/dev/null 2>&1; }
prov_quiet() { "$@" >/dev/null 2>&1; }

# --- the parts: each adds the Debian packages it lacks to prov_need (or prov_want: best effort) ---
prov_need=()
prov_want=()
prov_py="1 1"
prov_part_build() {
  prov_have gcc || prov_need+=(gcc)
  prov_have g++ || prov_need+=(g++)
  prov_have make || prov_need+=(make)
  prov_have ar || prov_need+=(binutils)
  prov_have tar || prov_need+=(tar)
  prov_have gzip || prov_need+=(gzip)
  prov_have curl || prov_need+=(curl ca-certificates)
  prov_have python3 || prov_need+=(python3)
  # one interpreter start for both questions (pip itself takes seconds to start on a busy machine)
  prov_py="$(python3 -c 'import importlib.util as u; print(*(int(u.find_spec(m) is not None) for m in ("pip", "numpy")))' 2>/dev/null || echo "0 0")"
  [[ "${prov_py% *}" == 1 ]] || prov_need+=(python3-pip)
}
prov_part_hosts() {
  if ! ls "$prov_root/.cache/npm/llama.rn-0.4.4.tgz" "$prov_root/.cache/npm/whisper.rn-0.4.3.tgz" >/dev/null 2>&1; then
    prov_have npm || prov_need+=(nodejs npm)
  fi
}
prov_part_speech() {
  prov_have espeak-ng || prov_need+=(espeak-ng)
  prov_have sox || prov_need+=(sox)
}
prov_part_test() {
  prov_have valgrind || prov_need+=(valgrind)
  prov_have clang || prov_need+=(clang)
  prov_have llvm-symbolizer || prov_need+=(llvm)
  prov_have file || prov_need+=(file)
  prov_have ruby || prov_need+=(ruby)
  ls /usr/lib/jvm/*/include/jni.h >/dev/null 2>&1 || prov_need+=(default-jdk-headless)
  ls -d /usr/lib/llvm-*/include/c++/v1 >/dev/null 2>&1 || prov_need+=(libc++-dev)
  [[ -d /usr/aarch64-linux-gnu/include ]] || prov_need+=(libc6-dev-arm64-cross)
}
prov_part_aarch64() {
  prov_have qemu-aarch64 || prov_want+=(qemu-user)
  prov_have aarch64-linux-gnu-gcc || prov_want+=(gcc-aarch64-linux-gnu)
  [[ -d /usr/aarch64-linux-gnu/lib ]] || prov_want+=(libc6-dev-arm64-cross)
  prov_have clang || prov_want+=(clang)
}
prov_part_cross() {
  prov_have clang || prov_want+=(clang)
  prov_have file || prov_want+=(file)
  # the Android .so loaded under qemu-user (scripts/android-load.sh) needs a glibc aarch64 C++ toolchain
  prov_have qemu-aarch64 || prov_want+=(qemu-user)
  prov_have aarch64-linux-gnu-g++ || prov_want+=(g++-aarch64-linux-gnu)
}

# clang's libFuzzer + ASan runtime (scripts/fuzz.sh): a separate package from clang on Debian
prov_fuzz_runtime() {
  local d v
  prov_have clang || return 0
  d="$(mktemp -d)"
  echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void) d; (void) n; return 0; }' >"$d/p.c"
  if ! clang -fsanitize=fuzzer,address "$d/p.c" -o "$d/p" >/dev/null 2>&1; then
    v="$(clang -dumpversion | cut -d. -f1)"
    prov_apt 1 "libclang-rt-$v-dev" || prov_apt 1 "libclang-common-$v-dev" || { rm -rf "$d"; return 1; }
  fi
  rm -rf "$d"
}

prov_rustup_targets() { # <target...>: best effort (cross.sh builds std from rust-src when one is missing)
  local t have missing=()
  prov_have rustup || return 0
  have="$(rustup target list --installed 2>/dev/null)"
  for t in "$@"; do grep -qx "$t" <<<"$have" || missing+=("$t"); done
  # a target the mirror does not carry (here: aarch64-apple-ios-sim) is tried once per toolchain
  local rv no
  rv="$(rustc -V 2>/dev/null | tr -c 'A-Za-z0-9.\n' _)"
  for t in "${missing[@]}"; do
    no="$prov_root/.cache/provision/no-$t-$rv"
    [[ -e "$no" ]] && continue
    prov_step "rustup target add $t" prov_quiet rustup target add "$t" ||
      { mkdir -p "${no%/*}" && : >"$no"; prov_log "(not retried with this toolchain; scripts/cross.sh builds its std from rust-src)"; }
  done
}
prov_rustup_components() { # <component...>
  local c have
  prov_have rustup || return 0
  have="$(rustup component list --installed 2>/dev/null)"
  for c in "$@"; do
    grep -q "^$c" <<<"$have" || prov_step "rustup component add $c" prov_quiet rustup component add "$c" || true
  done
}

provision() {
  local parts=() p
  for p in "$@"; do
    case "$p" in
      all) parts+=(build hosts speech test aarch64 cross) ;;
      build|hosts|speech|test|aarch64|cross) parts+=("$p") ;;
      *) echo "provision: unknown part '$p' (build hosts speech test aarch64 cross all)" >&2; return 2 ;;
    esac
  done
  [[ "${GGML_RS_PROVISION:-1}" == 0 ]] && return 0
  export PATH="$HOME/.local/bin:$HOME/.cargo/bin:$PATH"
  for p in "${parts[@]}"; do "prov_part_$p"; done

  # 1. Debian packages (one apt-get for all the required ones, one for the best-effort ones)
  if ((${#prov_need[@]})); then
    mapfile -t prov_need < <(printf '%s\n' "${prov_need[@]}" | awk '!seen[$0]++')
    prov_apt 1 "${prov_need[@]}" || return 1
  fi
  if ((${#prov_want[@]})); then
    mapfile -t prov_want < <(printf '%s\n' "${prov_want[@]}" | awk '!seen[$0]++')
    prov_apt 0 "${prov_want[@]}"
  fi

  # 2. Python and Rust tools of the build part
  if [[ " ${parts[*]} " == *" build "* ]]; then
    if ! prov_have cmake || ! prov_have ninja; then
      prov_step "pip install cmake ninja" prov_pip cmake ninja || prov_apt 1 cmake ninja-build || return 1
      if prov_have pyenv; then pyenv rehash >/dev/null 2>&1 || true; fi
      hash -r
      if ! prov_have cmake || ! prov_have ninja; then
        prov_log "cmake/ninja installed but not on PATH ($PATH)" >&2
        return 1
      fi
    fi
    if [[ "${prov_py#* }" != 1 ]] && ! python3 -c "import numpy" >/dev/null 2>&1; then
      prov_step "pip install numpy" prov_pip numpy || return 1
    fi
    if ! prov_have cargo; then
      prov_step "Rust (rustup, stable, minimal profile)" \
        sh -c "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain stable >/dev/null" ||
        return 1
      hash -r
    fi
  fi
  if [[ " ${parts[*]} " == *" test "* ]]; then
    prov_fuzz_runtime || return 1
    prov_rustup_components rust-src # scripts/tsan.sh builds std with ThreadSanitizer
  fi
  if [[ " ${parts[*]} " == *" aarch64 "* ]]; then prov_rustup_targets aarch64-unknown-linux-gnu; fi
  if [[ " ${parts[*]} " == *" cross "* ]]; then
    prov_rustup_targets aarch64-linux-android x86_64-linux-android aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios
    prov_rustup_components llvm-tools rust-src
  fi
  if ((prov_ran)); then prov_log "ready (${parts[*]}; $((SECONDS - prov_t0)) s)"; fi
  return 0
}

prov_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -uo pipefail
  provision "$@"
  exit $?
else
  provision "$@" || { echo "provision: could not set up the machine for: $*" >&2; exit 1; }
fi
