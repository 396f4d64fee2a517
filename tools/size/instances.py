#!/usr/bin/env python3
"""Where a linked file's code goes: function bytes by module and the generic instances that repeat.

    python3 tools/size/instances.py [FILE] [N]

FILE (default: target/cross/link-aarch64-linux-android-full-both, the kept link scripts/cross.sh
leaves) is any linked ELF / Mach-O with symbols; N (default 30) rows per table. Symbols are grouped
by demangled name without the hash, so each generic function's instances (per revision Lm / Wsp,
per closure, per type) add up under one name; "excess" is what all but one instance of each cost.
"""
import collections, os, re, subprocess, sys

f = sys.argv[1] if len(sys.argv) > 1 else "target/cross/link-aarch64-linux-android-full-both"
top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
host = re.search(r"host: (\S+)", subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout).group(1)
nm = os.path.join(sysroot, "lib/rustlib", host, "bin/llvm-nm")
out = subprocess.run([nm, "-S", "-C", "--radix=d", "--defined-only", f], capture_output=True, text=True).stdout
size, count, total = collections.Counter(), collections.Counter(), 0
for line in out.splitlines():
    p = line.split(" ", 3)
    if len(p) < 4 or p[2] not in "tTwW":
        continue
    name = re.sub(r" \(\.llvm\.\d+\)", "", re.sub(r"::h[0-9a-f]{16}.*$", "", p[3]))
    size[name] += int(p[1]); count[name] += 1; total += int(p[1])
excess = lambda n: size[n] * (count[n] - 1) / count[n]
print(f"{f}: function bytes {total // 1024} KiB, repeated instances beyond the first {int(sum(map(excess, size))) // 1024} KiB")
by_mod = collections.Counter()
for n, s in size.items():
    parts = re.sub(r"\$LT\$.*", "", n).split("::")
    by_mod["::".join(parts[:3]) if parts[0] == "ggml_backend_rs" else parts[0].lstrip("<_")] += s
print(f"\n{'KiB':>6}  module (first three path segments in this crate, else the crate)")
for k, v in by_mod.most_common(top):
    print(f"{v / 1024:6.1f}  {k}")
print(f"\n{'bytes':>8} {'inst':>5} {'excess':>8}  function (all its instances)")
for n in sorted(size, key=lambda n: -excess(n))[:top]:
    if count[n] > 1:
        print(f"{size[n]:8d} {count[n]:5d} {int(excess(n)):8d}  {n[:140]}")
print(f"\n{'bytes':>8}  largest single functions")
for n in sorted(size, key=lambda n: -size[n] / count[n])[:top // 2]:
    print(f"{size[n] // count[n]:8d}  {n[:140]}")
