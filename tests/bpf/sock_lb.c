// A socket load balancer in the manner of Cilium's bpf_sock.c, reduced to one service and one
// backend: cgroup/connect4 rewrites SVC_IP:SVC_PORT to BE_IP:BE_PORT at connect() time and remembers
// the original address per socket cookie; cgroup/getpeername4 maps it back, so the application sees
// the service address while the kernel socket (ss) points at the backend and no NAT happens.
// Addresses are given at compile time: clang -DSVC_IP=0x0a60000a -DSVC_PORT=80 -DBE_IP=... -DBE_PORT=...
// With -DNOBE_IP=... -DNOBE_PORT=... a second service has no backend: connect4 rejects it, as bpf_sock.c does, and
// with -DHAVE_SET_RETVAL it first sets connect()'s errno to EHOSTUNREACH (Cilium's try_set_retval); without it the
// kernel fails connect() with EPERM. A kernel whose sock_addr hooks may not call bpf_set_retval (below 6.1)
// refuses to load the HAVE_SET_RETVAL build.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct orig {
	__u32 ip4;
	__u32 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* socket cookie */
	__type(value, struct orig);
} kprt_revnat SEC(".maps");

#define KPRT_EHOSTUNREACH 113

SEC("cgroup/connect4")
int kprt_connect4(struct bpf_sock_addr *ctx)
{
#ifdef NOBE_IP
	if (ctx->user_ip4 == bpf_htonl(NOBE_IP) && ctx->user_port == bpf_htons(NOBE_PORT)) {
#ifdef HAVE_SET_RETVAL
		bpf_set_retval(-KPRT_EHOSTUNREACH);
#endif
		return 0; /* reject: no backend */
	}
#endif
	if (ctx->user_ip4 != bpf_htonl(SVC_IP) || ctx->user_port != bpf_htons(SVC_PORT))
		return 1; /* allow, untouched */
	struct orig o = { .ip4 = ctx->user_ip4, .port = ctx->user_port };
	__u64 cookie = bpf_get_socket_cookie(ctx);
	bpf_map_update_elem(&kprt_revnat, &cookie, &o, BPF_ANY);
	ctx->user_ip4 = bpf_htonl(BE_IP);
	ctx->user_port = bpf_htons(BE_PORT);
	return 1;
}

SEC("cgroup/getpeername4")
int kprt_getpeername4(struct bpf_sock_addr *ctx)
{
	__u64 cookie = bpf_get_socket_cookie(ctx);
	struct orig *o = bpf_map_lookup_elem(&kprt_revnat, &cookie);
	if (o) {
		ctx->user_ip4 = o->ip4;
		ctx->user_port = o->port;
	}
	return 1;
}

char _license[] SEC("license") = "GPL";
