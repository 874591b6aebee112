"""``kpr check-access``: may the kubeconfig's user do what a run needs? Asked of the API server, nothing created."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from ..core.exits import declare_exit
from ..cluster.access import ManifestError, Need, creates_namespaces, load_needs, needed, review, where
from ..core.errors import ApiError, InfraError, KprError, Unavailable
from ..core.inputs import BadInput, one_line

#: how long check-access waits for the API server's first answer (connect and read each)
ANSWER_TIMEOUT = 15.0
EXIT = {0: "when everything is allowed", 1: "when something is denied or the API server cannot be asked (no answer to its "
        "first question within --timeout)", 2: "for bad input"}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check-access", help="Ask the API server whether this kubeconfig may do what a run needs (creates nothing)",
        description="For every rule of the RBAC manifest (clusters/rbac.yaml: the Roles and ClusterRoles a run needs) that the chosen "
                    "mode needs, ask the API server with a SelfSubjectAccessReview, which creates nothing, whether the kubeconfig's "
                    "user may do it; print a table. Modes: the run creates its namespaces (the default: namespace create and delete, "
                    "and bind on pytest-kpr-workloads, which the run binds to itself in each) or --namespace NAME (pre-created: the "
                    "workloads' rules in NAME).")
    p.description += " " + declare_exit(p, EXIT)
    kube_arguments(p)
    p.add_argument("--namespace", help="as --kpr-namespace: NAME (asked in that namespace) or PREFIX- (the run creates namespaces: "
                                       "asked for any namespace). Default: kpr- (the run creates them)")
    p.add_argument("--cilium-namespace", default="kube-system", help="as --kpr-cilium-namespace (default: kube-system)")
    p.add_argument("--disruptive", action="store_true", help="also what the kpr_disruptive suites need")
    p.add_argument("--rbac", type=Path, help="the RBAC manifest (default: clusters/rbac.yaml, the rootdir's or the installed one)")
    p.set_defaults(func=run)


def kube_arguments(p: argparse.ArgumentParser) -> None:
    """--kubeconfig, --context and --timeout, as every kpr command that asks the API server takes them (:func:`_kube`)."""
    p.add_argument("--kubeconfig", type=Path, help="kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
    p.add_argument("--context", help="context of the kubeconfig (default: its current-context)")
    p.add_argument("--timeout", type=float, default=ANSWER_TIMEOUT, help=f"seconds to wait for the API server's first answer "
                                                                         f"(default: {ANSWER_TIMEOUT:g})")


def _kube(args: argparse.Namespace) -> Any:
    from ..cluster.existing import kubeconfig_problem
    from ..cluster.kind import default_env_kubeconfig
    from ..k8s.client import RealKube

    path = args.kubeconfig or default_env_kubeconfig()
    if path is None or not Path(path).is_file():
        raise BadInput(f"no kubeconfig ({path or 'KUBECONFIG unset, no ~/.kube/config'}); pass --kubeconfig PATH")
    why = kubeconfig_problem(Path(path), args.context)
    if why:
        raise BadInput(why)
    kube = RealKube(Path(path), args.context)
    timeout = float(getattr(args, "timeout", ANSWER_TIMEOUT))
    try:  # one bounded question first: an API server that accepts and never answers is one line, not a wait for ever
        kube.server_version(timeout=timeout)
    except (ApiError, InfraError) as e:
        raise Unavailable(f"the API server did not answer GET /version within {timeout:g} s ({one_line(str(e))})") from None
    return kube


def _manifest(args: argparse.Namespace) -> Path:
    if args.rbac is not None:
        return Path(args.rbac)
    from ..run.resources import find_clusters_dir

    d = find_clusters_dir()
    if d is None or not (d / "rbac.yaml").is_file():
        raise BadInput("no clusters/rbac.yaml found (pass --rbac FILE)")
    return d / "rbac.yaml"


def run(args: argparse.Namespace, kube_factory: Callable[[argparse.Namespace], Any] = _kube) -> int:
    from ..run.settings import _namespace
    from ..core.errors import SettingsError

    if args.namespace is not None:
        try:
            args.namespace = _namespace(args.namespace)
        except SettingsError as e:
            raise BadInput(f"--namespace: {e}") from None
    try:
        needs = [n for n in load_needs(_manifest(args)) if (n.when == "always" or args.disruptive) and needed(n, args.namespace)]
    except ManifestError as e:
        raise BadInput(str(e)) from None
    try:
        kube = kube_factory(args)
    except Unavailable as e:
        print(f"kpr check-access: {one_line(str(e))}", file=sys.stderr)
        return 1
    rows: list[tuple[bool, Need, str, str]] = []
    for need in needs:
        ns = where(need, args.namespace, args.cilium_namespace)
        try:
            allowed, reason = review(kube, need, ns)
        except (ApiError, InfraError) as e:
            print(f"kpr check-access: the API server cannot be asked ({one_line(str(e))})", file=sys.stderr)
            return 1
        except KprError as e:
            print(f"kpr check-access: {one_line(str(e))}", file=sys.stderr)
            return 1
        rows.append((allowed, need, ns, reason))
    width = max(len(n.what()) for _, n, _, _ in rows)
    for allowed, need, ns, reason in rows:
        place = ns or ("(cluster)" if need.scope == "cluster" or need.url else "(any namespace)")
        tail = f"  {one_line(reason)[:120]}" if reason and not allowed else ""
        print(f"{'allowed' if allowed else 'DENIED ':<7}  {need.verb:<6}  {need.what():<{width}}  {place:<18}  {need.role}{tail}")
    denied = [(n, ns) for ok, n, ns, _ in rows if not ok]
    if denied:
        n, ns = denied[0]
        print(f"kpr check-access: {len(denied)} of {len(rows)} denied, first: {n.verb} {n.what()}{f' in {ns}' if ns else ''} "
              f"({n.role} in the RBAC manifest)", file=sys.stderr)
        return 1
    mode = ("the run creates its namespaces and binds pytest-kpr-workloads to itself in each"
            if creates_namespaces(args.namespace) else f"the run works in {args.namespace} only")
    print(f"kpr check-access: all {len(rows)} allowed ({mode})", file=sys.stderr)
    return 0
