# rpc_port_base [span]: a random base for `span` (default 100) loopback ports of test rpc-servers,
# outside the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by
# default). Inside it, a port can be taken by any client connection on the machine (the tests' own
# connections to the previous server included: their TIME_WAIT local ports), and the server then
# fails with "Failed to create server socket" (a CI run saw it once in a few hundred).
rpc_port_base() {
  local span="${1:-100}" lo=32768 hi=60999
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  if (( lo - span > 12000 )); then
    echo $(( 10000 + RANDOM % (lo - span - 10000) ))
  else
    echo $(( hi + 1 + RANDOM % (65535 - hi - span) ))
  fi
}
