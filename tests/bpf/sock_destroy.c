// A UDP socket iterator that destroys the sockets connected to one port, in the manner Cilium's load balancer
// terminates the sockets of a deleted backend (pkg/loadbalancer/reconciler/termination.go): for every UDP socket of
// the reading process's network namespace whose peer port is DPORT, bpf_sock_destroy(), which calls the protocol's
// diag_destroy handler with ECONNABORTED (net/core/filter.c; a kfunc of Linux 6.5, only for BPF_TRACE_ITER programs).
// A kernel without the kfunc refuses to load it (libbpf finds no bpf_sock_destroy in the kernel's BTF).
// The kernel's structures are declared with only the fields read and preserve_access_index: libbpf relocates them
// against the running kernel's BTF (CO-RE), so one object serves every kernel. clang -DDPORT=5353.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct sock_common {
	__be16 skc_dport;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct udp_sock;
struct bpf_iter_meta;

struct bpf_iter__udp {
	struct bpf_iter_meta *meta;
	struct udp_sock *udp_sk;
} __attribute__((preserve_access_index));

extern int bpf_sock_destroy(struct sock_common *sk) __ksym;

SEC("iter/udp")
int kprt_destroy_udp(struct bpf_iter__udp *ctx)
{
	struct sock *sk = (struct sock *)ctx->udp_sk;

	if (!sk)
		return 0;
	if (sk->__sk_common.skc_dport == bpf_htons(DPORT))
		bpf_sock_destroy((struct sock_common *)sk);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
