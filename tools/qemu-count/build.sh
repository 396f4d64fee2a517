#!/usr/bin/env bash
# Builds .cache/qemu/libcount.so, the instruction-counting TCG plugin, against the plugin
# API header of the installed qemu: taken from Debian's source package of that exact version
# (`apt-get source --download-only qemu=<version>`, which needs a deb-src entry for the mirror,
# e.g. "Types: deb deb-src" in /etc/apt/sources.list.d/debian.sources), cached in .cache/qemu.
# QEMU_PLUGIN_H=/path/to/qemu-plugin.h skips the download.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="$ROOT/.cache/qemu"
header="${QEMU_PLUGIN_H:-}"
if [[ -z "$header" ]]; then
  version="$(dpkg-query -W -f='${Version}' qemu-user 2>/dev/null || true)"
  [[ -n "$version" ]] || { echo "qemu-count: qemu-user is not installed (apt-get install qemu-user)" >&2; exit 1; }
  src_version="${version%+b*}"   # binNMU suffix: the source version has none
  header="$(find "$CACHE" -name qemu-plugin.h -path '*include/qemu/*' 2>/dev/null | head -n1 || true)"
  if [[ -z "$header" ]]; then
    mkdir -p "$CACHE"
    (cd "$CACHE" && apt-get source --download-only "qemu=$src_version") \
      || { echo "qemu-count: apt-get source failed: add a deb-src entry for your Debian mirror" >&2; exit 1; }
    tarball="$(ls "$CACHE"/qemu_*.orig.tar.* | head -n1)"
    tar -xf "$tarball" -C "$CACHE" --wildcards '*/include/qemu/qemu-plugin.h'
    header="$(find "$CACHE" -name qemu-plugin.h -path '*include/qemu/*' | head -n1)"
  fi
fi
cc -O2 -shared -fPIC -Wall -Wextra -I "$(dirname "$header")" -o "$CACHE/libcount.so" "$HERE/count.c"
echo "$CACHE/libcount.so"
