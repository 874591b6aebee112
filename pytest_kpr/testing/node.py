"""The fake cluster's node tools: iptables-save (nft/legacy), nft, ss, bpftool, tc, curl.

Their output is rendered from the cluster's state in the tools' real formats (compare the samples in
``tests/data/local``, captured on a real kernel by ``scripts/capture_local_samples.sh``).
"""

from __future__ import annotations

import re
import shlex

from ..parse.addr import family_of
from ..rules.datapath import AFFINITY_MAP_PATH
from . import render
from .view import ClusterView
from .faults import Fails, Fault, declare


FAULTS = declare(  # what this module can be told to get wrong (pytest_kpr.testing.faults)
    Fault("kube_proxy_rules", "iptables", default=None,
          doc="kube-proxy's rules on every node: \"nft\" / \"legacy\" (iptables mode, in that backend), \"sep-only\" (only KUBE-SEP chains), "
              "\"nodeports\" (only a KUBE-NODEPORTS chain for the NodePort services), \"nftables\" (kube-proxy in nftables mode: its \"kube-proxy\""
              " table)",
          fails=(
              Fails(name="kube-proxy-iptables-nft", value="nft",
                    tests=("test_no_node_has_kube_proxy_service_rules", "test_no_rule_names_the_web_cluster_ip"),
                    says=("*iptables: kube-proxy's service rules are on the nodes*fake-worker (iptables-nft): kube-proxy chains {*'KUBE-SERVICES'*'KUBE-SVC'*'KUBE-SEP'*",
                          "*iptables: rules name web's ClusterIP 10.96.*so something other than BPF translates it*"),
                    runs="kube_proxy_installed"),
              Fails(name="kube-proxy-iptables-legacy", value="legacy",
                    tests=("test_no_node_has_kube_proxy_service_rules", "test_no_rule_names_the_web_cluster_ip"),
                    says="*iptables: kube-proxy's service rules are on the nodes*(iptables-legacy): kube-proxy chains*",
                    runs="kube_proxy_installed"),
              Fails(name="only-kube-sep", value="sep-only", tests="test_no_node_has_kube_proxy_service_rules",
                    says="*iptables: kube-proxy's service rules are on the nodes*kube-proxy chains {'KUBE-SEP': *",
                    runs="kube_proxy_installed"),
              Fails(name="kube-proxy-nodeport-chain", value="nodeports",
                    tests=("test_no_node_has_kube_proxy_service_rules", "nodeport::test_no_rule_names_the_nodeport"),
                    says=("*kube-proxy chains {'KUBE-NODEPORTS': *", "*NodePort: rules name the port*lines name the NodePort 30780*"),
                    runs="kube_proxy_installed"),
              Fails(name="kube-proxy-nftables-mode", value="nftables",
                    tests=("test_no_node_has_kube_proxy_service_rules", "test_no_rule_names_the_web_cluster_ip",
                           "nodeport::test_no_rule_names_the_nodeport"),
                    says=("*(nft): kube-proxy's nftables table [[]'ip kube-proxy'[]] with * chains*",
                          "*fake-worker (nft): * lines name web's ClusterIP*"),
                    runs="kube_proxy_installed"),
          )),
    Fault("kube_proxy_rules_v6", "iptables", default=None,
          doc="kube-proxy's service rules in ip6tables only (\"nft\" / \"legacy\"): what it programs for an IPv6 Service",
          fails=(
              # IPv6: kube-proxy programs an IPv6 Service into ip6tables (the nft family ip6 when iptables-nft), where an IPv4-only
              # reading would never look
              Fails(name="kube-proxy-ip6tables-nft", value="nft", tests="test_no_node_has_kube_proxy_service_rules",
                    says="*iptables: kube-proxy's service rules are on the nodes*fake-control-plane (ip6tables-nft): kube-proxy chains {'KUBE-SERVICES': *fake-control-plane (nft): kube-proxy chains*",
                    runs="kube_proxy_installed"),
              Fails(name="kube-proxy-ip6tables-legacy", value="legacy", tests="test_no_node_has_kube_proxy_service_rules",
                    says="*iptables: kube-proxy's service rules are on the nodes*fake-control-plane (ip6tables-legacy): kube-proxy chains {'KUBE-SERVICES': *",
                    runs="kube_proxy_installed"),
          )),
    Fault("unreadable_rule_view", "iptables", default=None,
          doc="\"iptables-nft\" | \"iptables-legacy\" | \"ip6tables-nft\" | \"ip6tables-legacy\" | \"nft\": that view's tool is missing",
          fails=(
              Fails(name="unreadable-ip6tables-view", value="ip6tables-legacy",
                    tests=("hostport::test_no_rule_names_the_host_port", "test_every_node_can_be_read_in_each_rule_view",
                           "nodeport::test_no_rule_names_the_nodeport"),
                    says="*iptables: the rule views are not all readable*fake-worker: the ip6tables-legacy view could not be read*"),
              Fails(value="iptables-legacy",
                    tests=("hostport::test_no_rule_names_the_host_port", "test_every_node_can_be_read_in_each_rule_view",
                           "nodeport::test_no_rule_names_the_nodeport"),
                    says=("*iptables: the rule views are not all readable*fake-worker: the iptables-legacy view could not be read*",
                          "*NodePort: rules name the port*the iptables-legacy view could not be read*")),
          )),
    Fault("affinity_entry_not_written", "affinity",
          doc="requests from outside stick to one backend, yet the node's affinity map holds no entry for the client (the "
              "stickiness is not the affinity map's)",
          fails=Fails(tests="test_the_nodes_affinity_map_holds_the_clients_entry",
                      says="*affinity from outside (the node's affinity map): fake-worker's affinity map holds no entry for 172.18.0.1 and the NodePort frontend (rev NAT ID *) after the requests (entries: none)*")),
    Fault("affinity_rev_nat_host_order", "affinity",
          doc="the node's affinity map keys the entry by the service's rev NAT ID in the host's byte order (Cilium copies the "
              "service entry's index, stored in network order: datapath.SRC_REV_NAT_ORDER)",
          fails=Fails(tests="test_the_nodes_affinity_map_holds_the_clients_entry",
                      says="*affinity from outside (the node's affinity map): fake-worker's affinity map holds no entry for 172.18.0.1 and the NodePort frontend (rev NAT ID *) after the requests (entries: 172.18.0.1 rev_nat *); the client's entry carries rev NAT ID *, the frontend's ID with its two bytes swapped*")),
    Fault("endpoint_program_missing", "socket LB",
          doc="no BPF program on any pod's host-side device: bpftool shows nothing for it and tc no filter",
          fails=Fails(tests="test_holder_endpoint_runs_cilium_program_on_its_host_veth",
                      says="*socket LB: lxc* runs None, not cil_from_container*attach mode tcx expects tcx/ingress on lxc*, found None*")),
    Fault("netkit_attached_as_tcx", "socket LB",
          doc="on a netkit node the pod's program shows as tcx/ingress, as on a veth (Cilium attaches it as the netkit peer's: "
              "datapath.SRC_NETKIT_ATTACH)",
          fails=(
              # the netkit profile: the pod's program is the netkit peer's (datapath.SRC_NETKIT_ATTACH), not a tcx ingress one
              Fails(fake="datapath_mode='netkit', routing_mode='Native'", tests="test_holder_endpoint_runs_cilium_program_on_its_host_veth",
                    says="*socket LB: datapath mode netkit expects netkit/peer on lxc*, found tcx/ingress*"),
          )),
    Fault("nodeport_listener", "NodePort", "a process listens on every NodePort in the nodes' host namespace",
          fails=Fails(name="listener-on-the-nodeport", tests="test_nobody_listens_on_the_nodeport",
                      says="*NodePort: 1 sockets listen on :30780 on the node ([[]'0.0.0.0:30780'[]]); the answer must come from BPF, not a process*")),
    Fault("ipvs_services", "kube-proxy", "every node has IPVS virtual services (kube-proxy's IPVS mode or its leftovers)",
          fails=Fails(tests="test_no_node_has_ipvs_services",
                      says="*kube-proxy: a second authority for Services, IPVS virtual services on the nodes*fake-worker: * IPVS virtual services (TCP 0A600001:01BB*")),
    Fault("hostport_portmap", "hostPort", "the CNI portmap plugin's iptables DNAT rules serve the hostPort instead of BPF",
          fails=Fails(tests="test_no_rule_names_the_host_port",
                      says="*hostPort: rules name the port, so portmap (not BPF) serves it: fake-worker (iptables-nft): 2 lines name the hostPort 18780*CNI-HOSTPORT-DNAT*")),
    Fault("hostport_listener", "hostPort", "a process listens on each hostPort in the node's host namespace (a userspace forwarder)",
          fails=Fails(tests="test_nobody_listens_on_the_host_port",
                      says="*hostPort: 1 sockets listen on :18780 on the node ([[]'0.0.0.0:18780'[]]); the answer must come from BPF, not a process*")),
)

# What a kind node with Cilium (KPR) carries in iptables: kind's Docker DNS NAT, kubelet's chains, Cilium's.
_KIND_NAT = [
    ":DOCKER_OUTPUT - [0:0]",
    ":DOCKER_POSTROUTING - [0:0]",
    ":CILIUM_OUTPUT_nat - [0:0]",
    ":CILIUM_POST_nat - [0:0]",
    ":CILIUM_PRE_nat - [0:0]",
    ":KUBE-KUBELET-CANARY - [0:0]",
    "-A PREROUTING -m comment --comment \"cilium-feeder: CILIUM_PRE_nat\" -j CILIUM_PRE_nat",
    "-A OUTPUT -m comment --comment \"cilium-feeder: CILIUM_OUTPUT_nat\" -j CILIUM_OUTPUT_nat",
    "-A OUTPUT -d 172.18.0.1/32 -j DOCKER_OUTPUT",
    "-A POSTROUTING -m comment --comment \"cilium-feeder: CILIUM_POST_nat\" -j CILIUM_POST_nat",
    "-A POSTROUTING -d 172.18.0.1/32 -j DOCKER_POSTROUTING",
    "-A DOCKER_OUTPUT -d 172.18.0.1/32 -p tcp -m tcp --dport 53 -j DNAT --to-destination 127.0.0.11:41237",
    "-A DOCKER_POSTROUTING -s 127.0.0.11/32 -p tcp -m tcp --sport 41237 -j SNAT --to-source 172.18.0.1:53",
]
_KIND_FILTER = [
    ":CILIUM_FORWARD - [0:0]",
    ":CILIUM_INPUT - [0:0]",
    ":CILIUM_OUTPUT - [0:0]",
    ":KUBE-FIREWALL - [0:0]",
    "-A INPUT -m comment --comment \"cilium-feeder: CILIUM_INPUT\" -j CILIUM_INPUT",
    "-A FORWARD -m comment --comment \"cilium-feeder: CILIUM_FORWARD\" -j CILIUM_FORWARD",
    "-A OUTPUT -m comment --comment \"cilium-feeder: CILIUM_OUTPUT\" -j CILIUM_OUTPUT",
    "-A CILIUM_FORWARD -o cilium_host -m comment --comment \"cilium: any->cluster on cilium_host forward accept\" -j ACCEPT",
]
_BUILTIN = {"nat": ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"], "filter": ["INPUT", "FORWARD", "OUTPUT"]}


class FakeNodeTools:
    def __init__(self, cluster: ClusterView):
        self.cluster = cluster
        for name in ("iptables-save", "iptables-nft-save", "iptables-legacy-save", "ip6tables-nft-save", "ip6tables-legacy-save", "nft", "ss",
                     "bpftool", "tc", "curl", "uname", "cat"):
            cluster.node_exec_handlers[name] = self.handle
        cluster.node_exec_handlers["sh"] = self.sh

    def ip_vs(self, node: str) -> tuple[int, str, str]:
        """/proc/net/ip_vs exists only with the IPVS module loaded (a kind node without kube-proxy's IPVS mode: no file).
        The ipvs_services fault: kube-proxy's IPVS mode programmed a virtual service per Service port (hex addresses)."""
        if not self.cluster.cfg.faults.ipvs_services:
            return 1, "", "cat: /proc/net/ip_vs: No such file or directory\n"
        text = ("IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n"
                "  -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n"
                "TCP  0A600001:01BB rr\n  -> AC120002:192B      Masq    1      0          0\n")  # default/kubernetes 10.96.0.1:443
        for svc in self.cluster.services():
            ip = svc["spec"].get("clusterIP")
            if not ip or ip == "None":
                continue
            hexip = "".join(f"{int(o):02X}" for o in ip.split("."))
            for port in svc["spec"].get("ports", []):
                text += f"{port.get('protocol', 'TCP')}  {hexip}:{int(port['port']):04X} rr\n"
        return 0, text, ""

    def sh(self, node: str, argv: list[str]) -> tuple[int, str, str]:
        """``sh -c`` as :func:`pytest_kpr.observe.batch.script` writes it (the only shell the fake speaks)."""
        from ..observe.batch import interpret

        if argv[1:2] != ["-c"] or len(argv) != 3:
            return 2, "", "sh: the fake runs only sh -c SCRIPT\n"

        def one(cmd: list[str]) -> tuple[int, str, str]:
            handler = self.cluster.node_exec_handlers.get(cmd[0]) if cmd else None
            if handler is None or cmd[0] == "sh":
                return 127, "", f"sh: 1: {cmd[0] if cmd else ''}: not found\n"
            return handler(node, cmd)

        return interpret(argv[2], one)

    def handle(self, node: str, argv: list[str]) -> tuple[int, str, str]:
        tool = argv[0]
        view = {"iptables-nft-save": "iptables-nft", "iptables-legacy-save": "iptables-legacy", "ip6tables-nft-save": "ip6tables-nft",
                "ip6tables-legacy-save": "ip6tables-legacy", "nft": "nft"}.get(tool)
        if view is not None and view == self.cluster.cfg.faults.unreadable_rule_view:
            return 127, "", f'OCI runtime exec failed: exec: "{tool}": executable file not found in $PATH'
        if tool in ("iptables-save", "iptables-nft-save"):
            return 0, self.iptables_save(node, "nft"), ""
        if tool == "iptables-legacy-save":
            return 0, self.iptables_save(node, "legacy"), ""
        if tool in ("ip6tables-nft-save", "ip6tables-legacy-save"):
            return 0, self.iptables_save(node, tool.split("-")[1], v6=True), ""
        if argv[:3] == ["nft", "list", "ruleset"]:
            return 0, self.nft_ruleset(node), ""
        if tool == "ss":
            return self.ss(node, argv[1:])
        if argv == ["cat", "/proc/net/ip_vs"]:
            return self.ip_vs(node)
        if argv[:3] == ["bpftool", "net", "show"]:
            return self.bpftool_net(node, argv[3:])
        if argv[:4] == ["bpftool", "map", "dump", "pinned"] and len(argv) == 6 and argv[5] == "-j":
            return self.bpftool_map_dump(node, argv[4])
        if argv[:3] == ["tc", "filter", "show"]:
            return self.tc_filter(node, argv[3:])
        if tool == "curl":
            return self.cluster.curl_from_node(node, argv[1:])
        if argv == ["uname", "-r"]:
            return 0, self.cluster.cfg.kernel + "\n", ""
        return 1, "", f"{tool}: unsupported arguments {' '.join(argv[1:])}\n"

    # -- iptables / nft --------------------------------------------------------------------------------

    def _kube_proxy_rules(self, v6: bool = False) -> list[str]:
        """The rules kube-proxy (iptables mode) would leave: the fault a KPR cluster must not have. ``v6``: as in ip6tables,
        for each Service's IPv6 twin in kind's IPv6 service range (fd00:10:96::/112, the last octet kept)."""
        rules = [":KUBE-SERVICES - [0:0]", "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"]
        for svc in self.cluster.services():
            ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
            chain = "KUBE-SVC-" + _h(f"{ns}/{name}")
            rules.insert(0, f":{chain} - [0:0]")
            ip = svc["spec"]["clusterIP"]
            dst = f"fd00:10:96::{int(ip.rsplit('.', 1)[-1]):x}/128" if v6 else f"{ip}/32"
            for port in svc["spec"].get("ports", []):
                rules.append(f"-A KUBE-SERVICES -d {dst} -p tcp -m comment --comment \"{ns}/{name} cluster IP\" -m tcp --dport {port['port']} -j {chain}")
                for pod in self.cluster.endpoints_of(svc):
                    sep = "KUBE-SEP-" + _h(f"{ns}/{name}/{pod['metadata']['name']}/{port['port']}")
                    rules.insert(0, f":{sep} - [0:0]")
                    rules.append(f"-A {chain} -m comment --comment \"{ns}/{name} -> {pod['status']['podIP']}:{port.get('targetPort', port['port'])}\" -j {sep}")
                    rules.append(f"-A {sep} -p tcp -m tcp -j DNAT --to-destination {pod['status']['podIP']}:{port.get('targetPort', port['port'])}")
        return rules

    def _sep_only_rules(self) -> list[str]:
        """Only kube-proxy's per-endpoint KUBE-SEP chains (the fault the iptables suite must not ignore)."""
        return [r for r in self._kube_proxy_rules() if r.startswith(":KUBE-SEP-") or r.startswith("-A KUBE-SEP-")]

    def _nodeport_rules(self) -> list[str]:
        """Only kube-proxy's KUBE-NODEPORTS chain for the NodePort services."""
        rules = [":KUBE-NODEPORTS - [0:0]"]
        for svc in self.cluster.services():
            ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
            for port in svc["spec"].get("ports", []):
                if port.get("nodePort"):
                    ext = "KUBE-EXT-" + _h(f"{ns}/{name}")
                    rules.insert(0, f":{ext} - [0:0]")
                    rules.append(f"-A KUBE-NODEPORTS -p tcp -m comment --comment \"{ns}/{name}\" -m tcp --dport {port['nodePort']} -j {ext}")
        return rules

    def _tables(self, node: str, backend: str) -> dict[str, list[str]]:
        mode = self.cluster.cfg.faults.kube_proxy_rules
        if node in self.cluster.kube_proxy_cleaned and node not in self.cluster.kube_proxy_nodes:
            mode = None  # kube-proxy --cleanup ran here
        if mode is None and node in self.cluster.kube_proxy_nodes:
            mode = "nft"  # a kube-proxy installed into the cluster ran here (iptables mode, kind's iptables-nft)
        kube_proxy = {"sep-only": self._sep_only_rules, "nodeports": self._nodeport_rules}.get(mode or "", self._kube_proxy_rules)
        if backend == "legacy":
            nat: list[str] = kube_proxy() if mode == "legacy" else []
            return {"nat": nat} if nat else {}
        nat = list(_KIND_NAT)
        if mode in ("nft", "sep-only", "nodeports"):
            nat = kube_proxy() + nat
        if self.cluster.cfg.faults.hostport_portmap:
            nat = self._portmap_rules(node) + nat
        return {"nat": nat, "filter": list(_KIND_FILTER)}

    def _portmap_rules(self, node: str) -> list[str]:
        """The hostport_portmap fault: the CNI portmap plugin's DNAT chains for the hostPort pods on ``node``."""
        rules = [":CNI-HOSTPORT-DNAT - [0:0]"]
        for pod in self.cluster.pods():
            if pod["spec"].get("nodeName") != node:
                continue
            for ctr in pod["spec"].get("containers") or []:
                for cp in ctr.get("ports") or []:
                    if cp.get("hostPort"):
                        chain = f"CNI-DN-{_h(pod['metadata']['name'])[:20]}"
                        rules += [f":{chain} - [0:0]",
                                  f"-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"kindnet\\\"\" -m multiport --dports {cp['hostPort']} -j {chain}",
                                  f"-A {chain} -p tcp -m tcp --dport {cp['hostPort']} -j DNAT --to-destination {pod['status'].get('podIP')}:{cp['containerPort']}"]
        return rules

    def _kube_proxy_nft_table(self) -> str:
        """kube-proxy in nftables mode: its ``kube-proxy`` table, in the shape ``nft list table`` prints
        (tests/data/local/nft-kube-proxy-nftables-mode.txt, captured on a real kernel)."""
        ips, nodeports, chains = [], [], []
        for svc in self.cluster.services():
            ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
            for port in svc["spec"].get("ports", []):
                sid = f"{_h(ns + '/' + name)[:8]}-{ns}/{name}/tcp/{port.get('name') or port['port']}"
                ips.append(f"{svc['spec']['clusterIP']} . tcp . {port['port']} : goto service-{sid}")
                if port.get("nodePort"):
                    nodeports.append(f"tcp . {port['nodePort']} : goto external-{sid}")
                    chains.append((f"external-{sid}", ["jump mark-for-masquerade", f"goto service-{sid}"]))
                eps = [p["status"]["podIP"] for p in self.cluster.endpoints_of(svc)]
                body = [f"ip daddr {svc['spec']['clusterIP']} tcp dport {port['port']} ip saddr != 10.244.0.0/16 jump mark-for-masquerade"]
                if eps:
                    target = int(port.get("targetPort", port["port"]))
                    tag = port.get("name") or port["port"]
                    body.append(f"numgen random mod {len(eps)} vmap {{ " + ", ".join(
                        f"{i} : goto endpoint-{_h(ip)[:8]}-{ns}/{name}/tcp/{tag}__{ip}/{target}" for i, ip in enumerate(eps)) + " }")
                    for ip in eps:
                        chains.append((f"endpoint-{_h(ip)[:8]}-{ns}/{name}/tcp/{tag}__{ip}/{target}", [f"meta l4proto tcp dnat to {ip}:{target}"]))
                chains.insert(0, (f"service-{sid}", body))
        out = ["table ip kube-proxy {",
               "\tmap service-ips {", "\t\ttype ipv4_addr . inet_proto . inet_service : verdict",
               *([f"\t\telements = {{ {', '.join(ips)} }}"] if ips else []), "\t}", "",
               "\tmap service-nodeports {", "\t\ttype inet_proto . inet_service : verdict",
               *([f"\t\telements = {{ {', '.join(nodeports)} }}"] if nodeports else []), "\t}", "",
               "\tchain services {", "\t\tip daddr . meta l4proto . th dport vmap @service-ips",
               "\t\tfib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports", "\t}", "",
               "\tchain nat-prerouting {", "\t\ttype nat hook prerouting priority dstnat; policy accept;", "\t\tjump services", "\t}"]
        for chain, body in chains + [("mark-for-masquerade", ["meta mark set meta mark | 0x00004000"])]:
            out += ["", f"\tchain {chain} {{", *[f"\t\t{line}" for line in body], "\t}"]
        return "\n".join(out + ["}"]) + "\n"

    def _tables6(self, node: str, backend: str) -> dict[str, list[str]]:
        """ip6tables: kubelet's and Cilium's chains as in IPv4 (kind's nodes run both families' tools); the
        kube_proxy_rules_v6 fault adds kube-proxy's service chains there only (an IPv6 Service's rules)."""
        mode = self.cluster.cfg.faults.kube_proxy_rules_v6
        if node in self.cluster.kube_proxy_cleaned and node not in self.cluster.kube_proxy_nodes:
            mode = None  # kube-proxy --cleanup ran here (it flushes both families)
        if backend == "legacy":
            return {"nat": self._kube_proxy_rules(v6=True)} if mode == "legacy" else {}
        nat = list(_KIND_NAT)
        if mode == "nft":
            nat = self._kube_proxy_rules(v6=True) + nat
        return {"nat": nat, "filter": list(_KIND_FILTER)}

    def iptables_save(self, node: str, backend: str, v6: bool = False) -> str:
        tables = self._tables6(node, backend) if v6 else self._tables(node, backend)
        head = (f"ip6tables-nft-save v1.8.9 (nf_tables)" if v6 else "iptables-nft-save v1.8.9 (nf_tables)") if backend == "nft" \
            else ("ip6tables-save v1.8.9" if v6 else "iptables-save v1.8.9")
        out = []
        for table, rules in tables.items():
            out.append(f"# Generated by {head} on Sun Nov 29 12:00:00 2026")
            out.append(f"*{table}")
            out += [f":{c} ACCEPT [0:0]" for c in _BUILTIN[table]]
            out += [r for r in rules if r.startswith(":")]
            out += [r for r in rules if not r.startswith(":")]
            out.append("COMMIT")
            out.append("# Completed on Sun Nov 29 12:00:00 2026")
        return "\n".join(out) + ("\n" if out else "")

    def nft_ruleset(self, node: str) -> str:
        """iptables-nft tables as ``nft list ruleset`` shows them (rules kept in iptables syntax as comments
        would not be real; translate the few shapes used here)."""
        out = []
        for family, table, rules in [("ip", t, r) for t, r in self._tables(node, "nft").items()] + \
                [("ip6", t, r) for t, r in self._tables6(node, "nft").items()]:
            out.append(f"table {family} {table} {{")
            chains: dict[str, list[str]] = {c: [] for c in _BUILTIN[table]}
            for r in rules:
                if r.startswith(":"):
                    chains.setdefault(r[1:].split()[0], [])
                else:
                    chain, _, rest = r[3:].partition(" ")
                    chains.setdefault(chain, []).append(_to_nft(rest))
            for chain, body in chains.items():
                out.append(f"\tchain {chain} {{")
                if chain in _BUILTIN[table]:
                    hook = chain.lower()
                    out.append(f"\t\ttype {'nat' if table == 'nat' else 'filter'} hook {hook} priority {'dstnat' if hook == 'prerouting' else 'srcnat' if hook == 'postrouting' else '-100' if table == 'nat' else 'filter'}; policy accept;")
                out += [f"\t\t{line}" for line in body]
                out.append("\t}")
            out.append("}")
        extra = self.cluster.node_nft_tables.get(node, "")
        if self.cluster.cfg.faults.kube_proxy_rules == "nftables" and node not in self.cluster.kube_proxy_cleaned:
            extra += self._kube_proxy_nft_table()
        return "\n".join(out) + "\n" + extra

    # -- sockets ---------------------------------------------------------------------------------------

    def ss(self, node: str, args: list[str]) -> tuple[int, str, str]:
        listeners = [("0.0.0.0", 10250), ("127.0.0.1", 10248), ("127.0.0.1", 9879), ("0.0.0.0", 4240)]
        listeners += [("0.0.0.0", p) for p in self.cluster.node_listeners.get(node, [])]
        if self.cluster.cfg.faults.nodeport_listener:
            listeners += [("0.0.0.0", int(p["nodePort"])) for s in self.cluster.services() for p in s["spec"].get("ports", []) if p.get("nodePort")]
        if self.cluster.cfg.faults.hostport_listener:  # fault: a process (a userspace port forwarder) holds the hostPorts
            listeners += [("0.0.0.0", int(cp["hostPort"])) for p in self.cluster.pods() if p["spec"].get("nodeName") == node
                          for c in p["spec"].get("containers") or [] for cp in c.get("ports") or [] if cp.get("hostPort")]
        flags = args[0] if args else ""
        if "l" not in flags:
            return 0, "", ""
        port = None
        if len(args) > 1:
            m = re.fullmatch(r"sport = :(\d+)", args[1])
            if m is None:
                return 1, "", f"ss: bad filter expression {args[1]!r}\n"
            port = int(m.group(1))
        rows = [f"LISTEN 0      4096   {ip}:{p} 0.0.0.0:*" for ip, p in listeners if port is None or p == port]
        header = "" if "H" in flags else "State  Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n"
        return 0, header + "".join(r + "\n" for r in rows), ""

    # -- BPF attachments -------------------------------------------------------------------------------

    def bpftool_net(self, node: str, args: list[str]) -> tuple[int, str, str]:
        dev = args[1] if args[:1] == ["dev"] and len(args) > 1 else None
        eps = [e for e in self.cluster.endpoints_on(node) if dev is None or e["ifname"] == dev]
        if dev is not None and not eps:
            return 255, "", f"Error: invalid devname {dev}\n"
        lines = ["xdp:", "", "tc:"]
        cfg = self.cluster.cfg
        netkit = cfg.datapath_mode.startswith("netkit") and not cfg.faults.netkit_attached_as_tcx
        for e in eps:
            if cfg.faults.endpoint_program_missing:
                continue
            if netkit:  # the peer's xmit program, attached through the host-side device (datapath.SRC_NETKIT_ATTACH)
                lines.append(f"{e['ifname']}({e['ifindex']}) netkit/peer cil_from_container prog_id {1000 + e['id']} link_id {e['id']} ")
            elif cfg.attach_mode == "tcx" or cfg.datapath_mode.startswith("netkit"):
                lines.append(f"{e['ifname']}({e['ifindex']}) tcx/ingress cil_from_container prog_id {1000 + e['id']} link_id {e['id']} ")
            else:
                lines.append(f"{e['ifname']}({e['ifindex']}) clsact/ingress cil_from_container-{e['ifname']} id {1000 + e['id']}")
        lines += ["", "flow_dissector:", "", "netfilter:", ""]
        return 0, "\n".join(lines) + "\n", ""

    def bpftool_map_dump(self, node: str, path: str) -> tuple[int, str, str]:
        """The node's per-packet affinity map (the agent's ``affinity_by_addr``) in Cilium's layout, as bpftool dumps it
        (render.map_dump_json; datapath.SRC_AFFINITY_MAP); another pin does not exist here."""
        family = next((f for f, p in AFFINITY_MAP_PATH.items() if p == path), None)
        if family is None:
            return 255, "", f"Error: bpf obj get ({path}): No such file or directory\n"
        c = self.cluster
        entries = []
        if not c.cfg.faults.affinity_entry_not_written:
            for (client, _service, ip, port), (backend, last_used) in sorted(c.agents[node].affinity_by_addr.items()):
                fe = c.lb.find(node, ip, port, "TCP")
                be_ip, _, be_port = backend.rpartition(":")
                if fe is None or family_of(client) != family:
                    continue
                order = "host" if c.cfg.faults.affinity_rev_nat_host_order else "network"
                entries.append(render.affinity_entry(client, fe.id, c.lb.backend_id(be_ip.strip("[]"), int(be_port), "TCP"),
                                                     last_used * 1_000_000_000, rev_nat_order=order))
        return 0, render.map_dump_json(entries) + "\n", ""

    def tc_filter(self, node: str, args: list[str]) -> tuple[int, str, str]:
        dev = args[1] if args[:1] == ["dev"] and len(args) > 1 else None
        direction = args[2] if len(args) > 2 else "ingress"
        eps = [e for e in self.cluster.endpoints_on(node) if e["ifname"] == dev]
        if not eps:
            return 1, "", f'Cannot find device "{dev}"\n'
        cfg = self.cluster.cfg
        if cfg.attach_mode == "tcx" or cfg.datapath_mode.startswith("netkit") or direction != "ingress" or cfg.faults.endpoint_program_missing:
            return 0, "", ""  # tcx and netkit attachments are invisible to tc
        e = eps[0]
        return 0, (
            "filter protocol all pref 1 bpf chain 0 \n"
            f"filter protocol all pref 1 bpf chain 0 handle 0x1 cil_from_container-{e['ifname']} direct-action not_in_hw "
            f"id {1000 + e['id']} name cil_from_contai tag 0123456789abcdef jited \n"
        ), ""


def _h(text: str) -> str:
    """kube-proxy's chain suffix: 16 characters of a base32 hash."""
    import base64
    import hashlib

    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:16]


def _to_nft(rule: str) -> str:
    """A few iptables rule shapes in nft syntax (as ``nft list ruleset`` shows iptables-nft rules)."""
    toks = shlex.split(rule)
    parts: list[str] = []
    i = 0
    comment = None
    target = ""
    while i < len(toks):
        t = toks[i]
        if t == "-d":
            parts.append(f"ip daddr {toks[i + 1].removesuffix('/32')}")
            i += 2
        elif t == "-s":
            parts.append(f"ip saddr {toks[i + 1].removesuffix('/32')}")
            i += 2
        elif t == "-o":
            parts.append(f'oifname "{toks[i + 1]}"')
            i += 2
        elif t == "-p":
            i += 2
        elif t == "-m":
            i += 2
        elif t == "--comment":
            comment = toks[i + 1]
            i += 2
        elif t in ("--dport", "--sport"):
            parts.append(f"tcp {t[2:]} {toks[i + 1]}")
            i += 2
        elif t == "-j":
            tgt = toks[i + 1]
            i += 2
            if tgt == "DNAT":
                target = f"dnat to {toks[i + 1]}"
                i += 2
            elif tgt == "SNAT":
                target = f"snat to {toks[i + 1]}"
                i += 2
            elif tgt == "ACCEPT":
                target = "accept"
            else:
                target = f"jump {tgt}"
        else:
            i += 1
    line = " ".join(parts + ["counter packets 0 bytes 0", target]).strip()
    if comment:
        line += f' comment "{comment}"'
    return line

