# Sourced by tools/qemu-count/count-hosts.sh and count-gemma.sh: one real-host driver run under
# qemu-user with the counting plugin, its count, and output comparisons. The caller sets $plugin
# (tools/qemu-count/build.sh's library) and $tmp (a scratch directory).

# qc_run <name> <exe> [VAR=value...] -- <driver args...>: the driver on one thread under the
# plugin, with those environment variables; writes $tmp/<name>.cnt (the plugin's line), .out (the
# driver's output file: tokens and logits / transcript) and .log (its stdout and stderr).
# QC_UNCOUNTED=1: the same run without the plugin (no .cnt)
qc_run() {
  local name="$1" exe="$2" env=() plug=(-plugin "$plugin,out=$tmp/$1.cnt")
  shift 2
  while (($#)) && [[ "$1" != -- ]]; do env+=("$1"); shift; done
  shift
  [[ "${QC_UNCOUNTED:-0}" == 1 ]] && plug=()
  env ${env[@]+"${env[@]}"} qemu-aarch64 -L /usr/aarch64-linux-gnu "${plug[@]}" \
      "$exe" "$@" -t 1 -o "$tmp/$name.out" >"$tmp/$name.log" 2>&1
}

# qc_insns <name>: the guest instructions qc_run <name> counted
qc_insns() { sed -E 's/.*insns=([0-9]+).*/\1/' "$tmp/$1.cnt"; }

# qc_same <name> <name>: whether the two runs' output files are equal byte for byte
qc_same() { cmp -s "$tmp/$1.out" "$tmp/$2.out" && echo bit-identical || echo DIFFERENT; }
