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
// With -DSVC6='{w0,w1,w2,w3}' -DSVC6_PORT=80 -DBE6='{...}' -DBE6_PORT=... (the addresses as four 32-bit words in host
// order, most significant first) the IPv6 twins connect6, sendmsg6, getpeername6 and recvmsg6 do the same for an IPv6
// service (bpf_sock.c __sock6_xlate_fwd / __sock6_xlate_rev, with LB6_REVERSE_NAT_SK_MAP's key: cookie, address, port),
// and -DNOBE6='{...}' -DNOBE6_PORT=... is a backendless IPv6 service.
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

#ifdef SVC6
struct revnat6_key {
	__u64 cookie;
	__u32 ip6[4];  /* the backend, as the socket sees it (network order) */
	__u32 port;
	__u32 pad;  /* named, so every initializer zeroes it: 28 bytes of fields pad to 32, and stray padding bytes made
	             * the key of connect6 and of getpeername6 differ on 5.10 (getpeername6 then found nothing) */
};

struct revnat6_val {
	__u32 ip6[4];  /* the service the application asked for */
	__u32 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct revnat6_key);
	__type(value, struct revnat6_val);
} kprt_revnat6 SEC(".maps");

static const __u32 svc6[4] = SVC6;
static const __u32 be6[4] = BE6;

static __always_inline int is6(const struct bpf_sock_addr *ctx, const __u32 *want, __u32 port)
{
	return ctx->user_ip6[0] == bpf_htonl(want[0]) && ctx->user_ip6[1] == bpf_htonl(want[1]) &&
	       ctx->user_ip6[2] == bpf_htonl(want[2]) && ctx->user_ip6[3] == bpf_htonl(want[3]) &&
	       ctx->user_port == bpf_htons(port);
}

static __always_inline int xlate_fwd6(struct bpf_sock_addr *ctx)
{
#ifdef NOBE6
	static const __u32 nobe6[4] = NOBE6;
	if (is6(ctx, nobe6, NOBE6_PORT)) {
#ifdef HAVE_SET_RETVAL
		bpf_set_retval(-KPRT_EHOSTUNREACH);
#endif
		return 0;
	}
#endif
	if (!is6(ctx, svc6, SVC6_PORT))
		return 1;
	struct revnat6_key k = { .cookie = bpf_get_socket_cookie(ctx), .port = bpf_htons(BE6_PORT) };
	struct revnat6_val v = { .port = ctx->user_port };
	for (int i = 0; i < 4; i++) {
		k.ip6[i] = bpf_htonl(be6[i]);
		v.ip6[i] = bpf_htonl(svc6[i]);
	}
	bpf_map_update_elem(&kprt_revnat6, &k, &v, BPF_ANY);
	ctx->user_ip6[0] = bpf_htonl(be6[0]);
	ctx->user_ip6[1] = bpf_htonl(be6[1]);
	ctx->user_ip6[2] = bpf_htonl(be6[2]);
	ctx->user_ip6[3] = bpf_htonl(be6[3]);
	ctx->user_port = bpf_htons(BE6_PORT);
	return 1;
}

static __always_inline void xlate_rev6(struct bpf_sock_addr *ctx)
{
	struct revnat6_key k = { .cookie = bpf_get_socket_cookie(ctx), .port = ctx->user_port };
	k.ip6[0] = ctx->user_ip6[0];
	k.ip6[1] = ctx->user_ip6[1];
	k.ip6[2] = ctx->user_ip6[2];
	k.ip6[3] = ctx->user_ip6[3];
	struct revnat6_val *v = bpf_map_lookup_elem(&kprt_revnat6, &k);
	if (v) {
		ctx->user_ip6[0] = v->ip6[0];
		ctx->user_ip6[1] = v->ip6[1];
		ctx->user_ip6[2] = v->ip6[2];
		ctx->user_ip6[3] = v->ip6[3];
		ctx->user_port = v->port;
	}
}

SEC("cgroup/connect6")
int kprt_connect6(struct bpf_sock_addr *ctx)
{
	return xlate_fwd6(ctx);
}

SEC("cgroup/sendmsg6")
int kprt_sendmsg6(struct bpf_sock_addr *ctx)
{
	return xlate_fwd6(ctx);
}

SEC("cgroup/getpeername6")
int kprt_getpeername6(struct bpf_sock_addr *ctx)
{
	xlate_rev6(ctx);
	return 1;
}

SEC("cgroup/recvmsg6")
int kprt_recvmsg6(struct bpf_sock_addr *ctx)
{
	xlate_rev6(ctx);
	return 1;
}
#endif /* SVC6 */

char _license[] SEC("license") = "GPL";
