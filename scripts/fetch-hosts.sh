#!/usr/bin/env bash
# Fetch the host packages from npm and extract each into .cache/hosts/<tag>/package.
# Idempotent. Tags: lm / wsp are the contract's old revisions (llama.rn 0.4.4, whisper.rn
# 0.4.3); cui / lm12 / wsp7 are the 2026 revision (cui-llama.rn 1.12.2, llama.rn 0.12.9,
# whisper.rn 0.7.4); rn013 is llama.rn 0.13.0-rc.5 (a release candidate: llama.cpp b11118 in
# upstream layout under package/vendor/llama.cpp, unprefixed ggml; its tarball's sha1, npm's
# dist.shasum, is checked). `npm pack` never runs a package's postinstall, so llama.rn >= 0.12's
# prebuilt-native download does not happen here: the sources are in package/cpp (package/vendor).
# Usage: fetch-hosts.sh [tag...]   (no tag: all of them)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPM_DIR="$ROOT/.cache/npm"
HOSTS_DIR="$ROOT/.cache/hosts"

# tag   npm-spec                  tarball name                  ggml.h in package/       sha1 (or -)
ALL_PKGS=(
  "lm    llama.rn@0.4.4            llama.rn-0.4.4.tgz            cpp/ggml.h               -"
  "wsp   whisper.rn@0.4.3          whisper.rn-0.4.3.tgz          cpp/ggml.h               -"
  "cui   cui-llama.rn@1.12.2       cui-llama.rn-1.12.2.tgz       cpp/ggml.h               -"
  "lm12  llama.rn@0.12.9           llama.rn-0.12.9.tgz           cpp/ggml.h               -"
  "wsp7  whisper.rn@0.7.4          whisper.rn-0.7.4.tgz          cpp/ggml.h               -"
  "rn013 llama.rn@0.13.0-rc.5      llama.rn-0.13.0-rc.5.tgz      vendor/llama.cpp/ggml/include/ggml.h 86e9738946289f26af9b8c1f0f6ac079fd6bf041"
)
PKGS=()
if (($#)); then
  for want in "$@"; do
    found=0
    for entry in "${ALL_PKGS[@]}"; do
      read -r tag _ <<<"$entry"
      if [[ "$tag" == "$want" ]]; then PKGS+=("$entry"); found=1; fi
    done
    ((found)) || { echo "fetch-hosts: unknown tag '$want'" >&2; exit 2; }
  done
else
  PKGS=("${ALL_PKGS[@]}")
fi

mkdir -p "$NPM_DIR" "$HOSTS_DIR"

missing=()
for entry in "${PKGS[@]}"; do
  read -r _prefix spec tgz _ <<<"$entry"
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
  read -r prefix spec tgz marker sha1 <<<"$entry"
  dest="$HOSTS_DIR/$prefix"
  stamp="$dest/.extracted-from"
  if [[ -f "$dest/package/$marker" && -f "$stamp" && "$(cat "$stamp")" == "$tgz" ]]; then
    continue
  fi
  if [[ "$sha1" != "-" ]] && ! echo "$sha1  $NPM_DIR/$tgz" | sha1sum -c --quiet - >/dev/null 2>&1; then
    echo "fetch-hosts: $tgz does not have the pinned sha1 $sha1 (delete it to fetch again)" >&2
    exit 1
  fi
  echo "fetch-hosts: extracting $tgz -> ${dest#"$ROOT"/}"
  rm -rf "$dest"
  mkdir -p "$dest"
  tar -xzf "$NPM_DIR/$tgz" -C "$dest"
  [[ -f "$dest/package/$marker" ]] || { echo "fetch-hosts: $dest/package/$marker missing after extraction" >&2; exit 1; }
  echo "$tgz" >"$stamp"
done

echo "fetch-hosts: ok ($HOSTS_DIR)"
