# Free TCP ports on 127.0.0.1 for private servers (sourced by scripts/pg and
# scripts/cluster).
#
# Ports are drawn outside the kernel's ephemeral range
# (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default): a port
# in that range that is free when picked can become the local end of any
# outgoing connection on the machine before our server binds it, which is
# how parallel tests lost a scheduler to "Address already in use". Below
# the range only another listener can take it, and port_in_use sees those.

# True when something on this machine listens on (or answers at) port $1.
port_in_use() {
  local port=$1
  if command -v ss >/dev/null; then
    [[ -n $(ss -Htln "sport = :$port" 2>/dev/null) ]] && return 0
  fi
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

# Prints "LOW HIGH", the range private servers draw their ports from.
private_port_range() {
  local eph_low=32768 eph_high=60999
  if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
    read -r eph_low eph_high </proc/sys/net/ipv4/ip_local_port_range
  fi
  if (( eph_low > 15000 )); then
    echo "10000 $((eph_low - 1))"
  else
    echo "$((eph_high + 1)) 65535"
  fi
}

# Prints a random port of private_port_range that nothing listens on and
# that is not in file $1 (optional: ports already handed out as key=PORT).
# Returns 1 after 200 tries.
pick_free_port() {
  local taken=${1:-} low high port _
  read -r low high < <(private_port_range)
  for _ in $(seq 1 200); do
    port=$(( low + (RANDOM * 32768 + RANDOM) % (high - low + 1) ))
    port_in_use "$port" && continue
    [[ -n $taken ]] && grep -q "=$port\$" "$taken" 2>/dev/null && continue
    echo "$port"
    return 0
  done
  return 1
}
