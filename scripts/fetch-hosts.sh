#!/usr/bin/env bash
# Fetch the two host packages (llama.rn / whisper.rn) from npm and extract
# them into .cache/hosts/{lm,wsp}/package. Idempotent.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPM_DIR="$ROOT/.cache/npm"
HOSTS_DIR="$ROOT/.cache/hosts"

# prefix  npm-spec          tarball name
PKGS=(
  "lm  llama.rn@0.4.4   llama.rn-0.4.4.tgz"
  "wsp whisper.rn@0.4.3 whisper.rn-0.4.3.tgz"
)

mkdir -p "$NPM_DIR" "$HOSTS_DIR"

missing=()
for entry in "${PKGS[@]}"; do
  read -r _prefix spec tgz <<<"$entry"
  if [[ ! -s "$NPM_DIR/$tgz" ]]; then
    missing+=("$spec")
  fi
done

if ((${#missing[@]})); then
  command -v npm >/dev/null 2>&1 || { echo "fetch-hosts: npm not found" >&2; exit 1; }
  echo "fetch-hosts: npm pack ${missing[*]}"
  (cd "$NPM_DIR" && npm pack --silent "${missing[@]}" >/dev/null)
fi

for entry in "${PKGS[@]}"; do
  read -r prefix spec tgz <<<"$entry"
  dest="$HOSTS_DIR/$prefix"
  stamp="$dest/.extracted-from"
  if [[ -f "$dest/package/cpp/ggml.h" && -f "$stamp" && "$(cat "$stamp")" == "$tgz" ]]; then
    continue
  fi
  echo "fetch-hosts: extracting $tgz -> ${dest#"$ROOT"/}"
  rm -rf "$dest"
  mkdir -p "$dest"
  tar -xzf "$NPM_DIR/$tgz" -C "$dest"
  [[ -f "$dest/package/cpp/ggml.h" ]] || { echo "fetch-hosts: $dest/package/cpp/ggml.h missing after extraction" >&2; exit 1; }
  echo "$tgz" >"$stamp"
done

echo "fetch-hosts: ok ($HOSTS_DIR)"
