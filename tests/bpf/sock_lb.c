// A socket load balancer in the manner of Cilium's bpf_sock.c, reduced to one service and one backend:
// cgroup/connect4 (connect(), TCP and connected UDP) and cgroup/sendmsg4 (an unconnected UDP sendto()) rewrite
// SVC_IP:SVC_PORT to BE_IP:BE_PORT and remember the service in a reverse-NAT map keyed, as Cilium's
// LB4_REVERSE_NAT_SK_MAP is, by (socket cookie, backend address, backend port) (bpf_sock.c sock4_update_revnat);
// cgroup/getpeername4 and cgroup/recvmsg4 map the backend's address back to the service (__sock4_xlate_rev): the
// application sees the service address (getpeername(), the source of a datagram read with recvfrom()) while the kernel
// socket and the packets use the backend, and no NAT happens.
// Addresses are given at compile time: clang -DSVC_IP=0x0a60000a -DSVC_PORT=80 -DBE_IP=... -DBE_PORT=...
// With -DNOBE_IP=... -DNOBE_PORT=... a second service has no backend: connect4 and sendmsg4 reject it, as bpf_sock.c
// does, and with -DHAVE_SET_RETVAL first set the errno to EHOSTUNREACH (Cilium's try_set_retval); without it the
// kernel fails the call with EPERM. A kernel whose sock_addr hooks may not call bpf_set_retval (below 6.1) refuses to
// load the HAVE_SET_RETVAL build.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct revnat_key {
	__u64 cookie;
	__u32 ip4;  /* the backend, as the socket sees it */
	__u32 port;
};

struct revnat_val {
	__u32 ip4;  /* the service the application asked for */
	__u32 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct revnat_key);
	__type(value, struct revnat_val);
} kprt_revnat SEC(".maps");

#define KPRT_EHOSTUNREACH 113

/* 1: the call proceeds (translated or untouched); 0: rejected, the service has no backend */
static __always_inline int xlate_fwd(struct bpf_sock_addr *ctx)
{
#ifdef NOBE_IP
	if (ctx->user_ip4 == bpf_htonl(NOBE_IP) && ctx->user_port == bpf_htons(NOBE_PORT)) {
#ifdef HAVE_SET_RETVAL
		bpf_set_retval(-KPRT_EHOSTUNREACH);
#endif
		return 0;
	}
#endif
	if (ctx->user_ip4 != bpf_htonl(SVC_IP) || ctx->user_port != bpf_htons(SVC_PORT))
		return 1;
	struct revnat_key k = { .cookie = bpf_get_socket_cookie(ctx), .ip4 = bpf_htonl(BE_IP), .port = bpf_htons(BE_PORT) };
	struct revnat_val v = { .ip4 = ctx->user_ip4, .port = ctx->user_port };
	bpf_map_update_elem(&kprt_revnat, &k, &v, BPF_ANY);
	ctx->user_ip4 = bpf_htonl(BE_IP);
	ctx->user_port = bpf_htons(BE_PORT);
	return 1;
}

static __always_inline void xlate_rev(struct bpf_sock_addr *ctx)
{
	struct revnat_key k = { .cookie = bpf_get_socket_cookie(ctx), .ip4 = ctx->user_ip4, .port = ctx->user_port };
	struct revnat_val *v = bpf_map_lookup_elem(&kprt_revnat, &k);
	if (v) {
		ctx->user_ip4 = v->ip4;
		ctx->user_port = v->port;
	}
}

SEC("cgroup/connect4")
int kprt_connect4(struct bpf_sock_addr *ctx)
{
	return xlate_fwd(ctx);
}

SEC("cgroup/sendmsg4")
int kprt_sendmsg4(struct bpf_sock_addr *ctx)
{
	return xlate_fwd(ctx);
}

SEC("cgroup/getpeername4")
int kprt_getpeername4(struct bpf_sock_addr *ctx)
{
	xlate_rev(ctx);
	return 1;
}

SEC("cgroup/recvmsg4")
int kprt_recvmsg4(struct bpf_sock_addr *ctx)
{
	xlate_rev(ctx);
	return 1;
}

char _license[] SEC("license") = "GPL";
