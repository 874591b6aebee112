// SPDX-License-Identifier: GPL-2.0
// The source-range check of Cilium's per-packet load balancer, reduced to what decides it: nodeport_lb4/nodeport_lb6
// look the frontend up and drop a packet whose source the ranges refuse, `if (!lb4_src_range_ok(svc, ip4->saddr))
// return DROP_NOT_IN_SRC_RANGE;` (bpf/lib/nodeport.h). lb4_src_range_ok (bpf/lib/lb.h): no check flag, no check; else
// an LPM trie keyed as Cilium's LB4_SRC_RANGE_MAP is -- the prefix length, the service's rev_nat_id and padding (the
// static 32 bits of SRC_RANGE_STATIC_PREFIX), then the address -- and `return verdict ^ !!(svc->flags2 &
// SVC_FLAG_SOURCE_RANGE_DENY);`. The IPv6 twin keys a 16-byte address (lb6_src_range_ok).
// Here the frontend is found in a small hash map (address, port) -> (rev_nat_id, flags) and a drop is counted in
// `drops`[0] under -177 (DROP_NOT_IN_SRC_RANGE). The self-tests run it on crafted packets with BPF_PROG_TEST_RUN: it is
// never attached, so no packet of the machine meets it.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define FLAG_CHECK 1
#define FLAG_DENY 2

struct svc4_key { __u32 addr; __u16 port; __u16 pad; };
struct svc6_key { __u32 addr[4]; __u16 port; __u16 pad; };
struct svc_val { __u16 rev_nat_id; __u16 flags; };

struct src4_key { __u32 prefixlen; __u16 rev_nat_id; __u8 pad[2]; __u32 addr; };
struct src6_key { __u32 prefixlen; __u16 rev_nat_id; __u8 pad[2]; __u32 addr[4]; };

/* the bits of the key before the address (rev_nat_id and pad): Cilium's SRC_RANGE_STATIC_PREFIX */
#define STATIC_PREFIX 32

struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16); __type(key, struct svc4_key); __type(value, struct svc_val); } svc4 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16); __type(key, struct svc6_key); __type(value, struct svc_val); } svc6 SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE); __uint(max_entries, 64); __uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct src4_key); __type(value, __u8);
} src4 SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE); __uint(max_entries, 64); __uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct src6_key); __type(value, __u8);
} src6 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } drops SEC(".maps");

static __always_inline int drop(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&drops, &zero);

	if (n)
		__sync_fetch_and_add(n, 1);
	return TC_ACT_SHOT;
}

static __always_inline int verdict(const struct svc_val *svc, void *key, void *trie)
{
	int found;

	if (!(svc->flags & FLAG_CHECK))
		return TC_ACT_OK;
	found = bpf_map_lookup_elem(trie, key) != 0;
	if (found ^ !!(svc->flags & FLAG_DENY))
		return TC_ACT_OK;
	return drop();
}

SEC("tc")
int kprt_src_range(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return TC_ACT_OK;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip4 = (void *)(eth + 1);
		struct tcphdr *tcp = (void *)(ip4 + 1);
		struct svc4_key sk = {};
		struct src4_key rk = {};
		struct svc_val *svc;

		if ((void *)(tcp + 1) > end || ip4->ihl != 5 || ip4->protocol != IPPROTO_TCP)
			return TC_ACT_OK;
		sk.addr = ip4->daddr;
		sk.port = tcp->dest;
		svc = bpf_map_lookup_elem(&svc4, &sk);
		if (!svc)
			return TC_ACT_OK;
		rk.prefixlen = STATIC_PREFIX + 32;
		rk.rev_nat_id = svc->rev_nat_id;
		rk.addr = ip4->saddr;
		return verdict(svc, &rk, &src4);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct tcphdr *tcp = (void *)(ip6 + 1);
		struct svc6_key sk = {};
		struct src6_key rk = {};
		struct svc_val *svc;

		if ((void *)(tcp + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return TC_ACT_OK;
		__builtin_memcpy(sk.addr, &ip6->daddr, 16);
		sk.port = tcp->dest;
		svc = bpf_map_lookup_elem(&svc6, &sk);
		if (!svc)
			return TC_ACT_OK;
		rk.prefixlen = STATIC_PREFIX + 128;
		rk.rev_nat_id = svc->rev_nat_id;
		__builtin_memcpy(rk.addr, &ip6->saddr, 16);
		return verdict(svc, &rk, &src6);
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
