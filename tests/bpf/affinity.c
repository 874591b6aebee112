// SPDX-License-Identifier: GPL-2.0
// The per-packet load balancer's session-affinity write, reduced to what decides the bytes of the entry: lb4_local /
// lb6_local look the frontend up, pick the backend, and record the pick with lb4/6_update_affinity_by_addr, whose key
// is the client's address and `.rev_nat_id = svc->rev_nat_index` (bpf/lib/lb.h), the value `.backend_id`,
// `.last_used`. The service entry here is written by the test as the agent writes it (the rev NAT index in network
// byte order: pkg/maps/lbmap Service4Value.ToNetwork), so the key's bytes are what a node's map holds: the compiler
// lays the structs out, the kernel stores them, bpftool prints them.
// The key and value layouts follow Cilium's declarations (struct lb4_affinity_key / lb6_affinity_key: the client union,
// __u16 rev_nat_id, __u8 netns_cookie:1, reserved:7, __u8 pad1, __u32 pad2, packed; struct lb_affinity_val: __u64
// last_used, __u32 backend_id, __u32 pad). last_used is read from the `now` array instead of the clock, so the entry
// is the same on every run. The program is never attached: the self-tests run it on crafted packets with
// BPF_PROG_TEST_RUN, so no packet of the machine meets it.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* struct lb4_key / lb6_key: the frontend and the backend slot (0: the service entry itself) */
struct svc4_key { __u32 address; __u16 dport; __u16 backend_slot; __u8 proto; __u8 scope; __u8 pad[2]; };
struct svc6_key { __u32 address[4]; __u16 dport; __u16 backend_slot; __u8 proto; __u8 scope; __u8 pad[2]; };
/* struct lb4_service / lb6_service: backend_id (or the affinity timeout in slot 0), count, rev_nat_index, flags */
struct svc_val { __u32 backend_id; __u16 count; __u16 rev_nat_index; __u8 flags; __u8 flags2; __u8 pad[2]; };

union aff4_client { __u32 client_ip; __u64 client_cookie; };
struct aff4_key { union aff4_client client_id; __u16 rev_nat_id; __u8 netns_cookie:1, reserved:7; __u8 pad1; __u32 pad2; } __attribute__((packed));
struct aff6_key { __u32 client_ip[4]; __u16 rev_nat_id; __u8 netns_cookie:1, reserved:7; __u8 pad1; __u32 pad2; } __attribute__((packed));
struct aff_val { __u64 last_used; __u32 backend_id; __u32 pad; };

_Static_assert(sizeof(struct aff4_key) == 16, "lb4_affinity_key is 16 bytes");
_Static_assert(sizeof(struct aff6_key) == 24, "lb6_affinity_key is 24 bytes");
_Static_assert(sizeof(struct aff_val) == 16, "lb_affinity_val is 16 bytes");

struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16); __type(key, struct svc4_key); __type(value, struct svc_val); } svc4 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16); __type(key, struct svc6_key); __type(value, struct svc_val); } svc6 SEC(".maps");
/* the affinity maps by size, not by type: without key and value types in BTF, bpftool prints the bytes only (a map with
 * them, as Cilium's are, adds a "formatted" object that the parser does not read) */
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 8); __uint(key_size, sizeof(struct aff4_key)); __uint(value_size, sizeof(struct aff_val)); } kprt_aff4 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 8); __uint(key_size, sizeof(struct aff6_key)); __uint(value_size, sizeof(struct aff_val)); } kprt_aff6 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } now SEC(".maps");

static __always_inline __u64 last_used(void)
{
	__u32 zero = 0;
	__u64 *t = bpf_map_lookup_elem(&now, &zero);

	return t ? *t : 0;
}

SEC("tc")
int kprt_affinity(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct aff_val val = {};
	struct svc_val *svc, *be;

	if ((void *)(eth + 1) > end)
		return TC_ACT_OK;
	val.last_used = last_used();
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip4 = (void *)(eth + 1);
		struct tcphdr *tcp = (void *)(ip4 + 1);
		struct svc4_key sk = {};
		struct aff4_key key = {};

		if ((void *)(tcp + 1) > end || ip4->ihl != 5 || ip4->protocol != IPPROTO_TCP)
			return TC_ACT_OK;
		sk.address = ip4->daddr;
		sk.dport = tcp->dest;
		sk.proto = IPPROTO_TCP;
		svc = bpf_map_lookup_elem(&svc4, &sk);
		if (!svc || !svc->count)
			return TC_ACT_SHOT;
		sk.backend_slot = 1;
		be = bpf_map_lookup_elem(&svc4, &sk);
		if (!be)
			return TC_ACT_SHOT;
		key.client_id.client_ip = ip4->saddr;
		key.rev_nat_id = svc->rev_nat_index;
		val.backend_id = be->backend_id;
		bpf_map_update_elem(&kprt_aff4, &key, &val, 0);
		return TC_ACT_OK;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct tcphdr *tcp = (void *)(ip6 + 1);
		struct svc6_key sk = {};
		struct aff6_key key = {};

		if ((void *)(tcp + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return TC_ACT_OK;
		__builtin_memcpy(sk.address, &ip6->daddr, 16);
		sk.dport = tcp->dest;
		sk.proto = IPPROTO_TCP;
		svc = bpf_map_lookup_elem(&svc6, &sk);
		if (!svc || !svc->count)
			return TC_ACT_SHOT;
		sk.backend_slot = 1;
		be = bpf_map_lookup_elem(&svc6, &sk);
		if (!be)
			return TC_ACT_SHOT;
		__builtin_memcpy(key.client_ip, &ip6->saddr, 16);
		key.rev_nat_id = svc->rev_nat_index;
		val.backend_id = be->backend_id;
		bpf_map_update_elem(&kprt_aff6, &key, &val, 0);
		return TC_ACT_OK;
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
