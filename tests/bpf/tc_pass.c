// SPDX-License-Identifier: GPL-2.0
// The smallest tc program: lets every packet pass. Used to probe how a kernel attaches tc programs
// (tcx bpf_link on 6.6+, legacy clsact filter before that), which is what Cilium's attach mode follows.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#define SEC(name) __attribute__((section(name), used))

SEC("tc")
int kprt_tc_pass(struct __sk_buff *skb)
{
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
