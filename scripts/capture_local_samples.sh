#!/usr/bin/env bash
# Capture authentic node-tool output on this machine's real kernel, for the parser tests:
# ss, busybox netstat, iptables-nft-save, iptables-legacy-save, nft list ruleset, bpftool net, tc filter.
# Everything happens in a throwaway network namespace; nothing touches the host namespace.
# Usage (root): scripts/capture_local_samples.sh [OUTDIR]   (default tests/data/local)
set -euo pipefail
OUT="${1:-$(dirname "$0")/../tests/data/local}"
mkdir -p "$OUT"
NS="kprcap-$$"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add "$NS"
X() { nsenter --net="/run/netns/$NS" "$@"; }
X ip link set lo up
X ip link add lxc1234 type veth peer name eth9
X ip addr add 10.250.9.1/24 dev lxc1234
X ip link set lxc1234 up; X ip link set eth9 up
# a listener and one established connection from source port 40404
X python3 -m http.server 8080 --bind 127.0.0.1 >/dev/null 2>&1 & PIDS+=($!)
for _ in $(seq 100); do X ss -Htln 'sport = :8080' | grep -q . && break; sleep 0.05; done
X python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",40404)); s.connect(("127.0.0.1",8080)); time.sleep(30)' & PIDS+=($!)
for _ in $(seq 100); do X ss -Htn 'sport = :40404' | grep -q ESTAB && break; sleep 0.05; done
X ss -Htln > "$OUT/ss-Htln.txt"
X ss -tn > "$OUT/ss-tn.txt"
X busybox netstat -tn > "$OUT/busybox-netstat-tn.txt"
# kube-proxy-style rules in both iptables backends, and a native nft table
X iptables-nft -t nat -N KUBE-SERVICES
X iptables-nft -t nat -N KUBE-SVC-ABCDEF
X iptables-nft -t nat -A PREROUTING -j KUBE-SERVICES
X iptables-nft -t nat -A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-ABCDEF
X iptables-nft -t nat -A KUBE-SVC-ABCDEF -p tcp -j DNAT --to-destination 10.250.9.2:8080
X iptables-legacy -t nat -A PREROUTING -p tcp --dport 30782 -m addrtype --dst-type LOCAL -j DNAT --to-destination 10.250.9.2:8080
X iptables-nft-save > "$OUT/iptables-nft-save.txt"
X iptables-legacy-save > "$OUT/iptables-legacy-save.txt"
X nft -f - <<'NFT'
table ip kpr {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    fib daddr type local tcp dport 30780 counter dnat to 10.250.9.2:8080
  }
}
NFT
X nft list ruleset > "$OUT/nft-list-ruleset.txt" 2>/dev/null
# a BPF program on the veth through legacy tc (clsact)
cat > "$WORK/prog.c" <<'C'
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("tc")
int cil_from_container(struct __sk_buff *skb) { return 0; }
char _license[] SEC("license") = "GPL";
C
clang -O2 -g -target bpf -I/usr/include/"$(uname -m)"-linux-gnu -c "$WORK/prog.c" -o "$WORK/prog.o"
X tc qdisc add dev lxc1234 clsact
X tc filter add dev lxc1234 ingress bpf da obj "$WORK/prog.o" sec tc
X bpftool net show dev lxc1234 > "$OUT/bpftool-net-show-legacy-tc.txt"
X tc filter show dev lxc1234 ingress > "$OUT/tc-filter-show-ingress.txt"
X tc filter show dev lxc1234 egress > "$OUT/tc-filter-show-egress-empty.txt"
# kube-proxy in nftables mode: its table as nft prints it (the fake renders the same shape for that fault)
X nft -f "$(dirname "$0")/kube-proxy-nftables.nft"
X nft list table ip kube-proxy > "$OUT/nft-kube-proxy-nftables-mode.txt"
{
  echo "Captured $(date -u +%Y-%m-%d) by scripts/capture_local_samples.sh"
  echo "kernel $(uname -r); $(ss -V); $(iptables-nft --version); $(nft --version); $(bpftool version | head -1); $(tc -V); busybox $(busybox | head -1 | awk '{print $2}')"
} > "$OUT/PROVENANCE.txt"
echo "samples written to $OUT"
