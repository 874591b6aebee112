"""``kpr cleanup``: remove what a killed run left -- its labelled objects in the cluster, its routes on this runner.

It lists first and removes only with ``--yes``. Cluster objects are chosen by pytest-kpr's labels and the run's id
(pytest_kpr.run.leftovers), never by name: ``--run ID`` for one run, ``--older-than DURATION`` for every run that old
(a run still going that long is one of them: pick the age with that in mind). Routes (``--routes``) are those the
ledgers of dead run processes name (pytest_kpr.cluster.routes), in this network namespace: a route of proto 233 that no
ledger names is not touched.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from ..core.exits import declare_exit
from ..core.errors import ApiError, InfraError, KprError
from ..core.inputs import BadInput, one_line
from .access import _kube, kube_arguments


def register(sub: Any) -> None:
    p = sub.add_parser(
        "cleanup", help="List, then with --yes remove, what a killed run left: its labelled cluster objects and its routes",
        description="List what runs left -- namespaces, LB-IPAM pools and ClusterRoleBindings labelled "
                    "app.kubernetes.io/managed-by=pytest-kpr with the run's kpr.cilium.io/run id, the run's objects in a named "
                    "--namespace, and with --routes the routes (proto 233) the ledgers of dead run processes on this runner name "
                    "-- and remove them with --yes (each object read again first: removed only while it still carries the labels).")
    p.description += " " + declare_exit(p, {0: "when nothing is left (or all was removed)",
                                            1: "when something is left or could not be removed", 2: "for bad input"})
    which = p.add_mutually_exclusive_group()
    which.add_argument("--run", metavar="ID", help="one run's objects and routes (the suffix of its namespaces, its results.json's run id)")
    which.add_argument("--older-than", metavar="DURATION", help="every run's objects created at least this long ago (30m, 2h, 1d); "
                                                                "routes: the ledgers of run processes that are gone")
    p.add_argument("--yes", action="store_true", help="remove what is listed (without it: list only)")
    p.add_argument("--routes", action="store_true", help="also this runner's routes of dead runs (needs CAP_NET_ADMIN to remove)")
    p.add_argument("--no-cluster", action="store_true", help="do not ask the cluster (only --routes)")
    p.add_argument("--namespace", metavar="NAME", help="a named --kpr-namespace the runs used: their objects there too")
    kube_arguments(p)
    p.set_defaults(func=run)


def _cluster(args: argparse.Namespace, kube_factory: Callable[[argparse.Namespace], Any], older: float | None) -> int:
    from ..core.errors import Unavailable
    from ..run.leftovers import find, remove

    try:
        kube = kube_factory(args)
    except Unavailable as e:
        print(f"kpr cleanup: {one_line(str(e))}", file=sys.stderr)
        return 1
    try:
        items = find(kube, run=args.run, older_than=older, namespace=args.namespace)
    except (ApiError, InfraError, KprError) as e:
        print(f"kpr cleanup: cannot list what runs left ({one_line(str(e))})", file=sys.stderr)
        return 1
    for it in items:
        age = f"{it.age_s / 3600:.1f} h old" if it.age_s is not None else "age unknown"
        print(f"{'remove' if args.yes else 'left  '}  {it.what():<70}  run {it.run_id}  {age}")
    if not items:
        print("kpr cleanup: no object of " + (f"run {args.run}" if args.run else f"a run older than {args.older_than}") + " in the cluster",
              file=sys.stderr)
        return 0
    if not args.yes:
        print(f"kpr cleanup: {len(items)} objects listed; run again with --yes to remove them", file=sys.stderr)
        return 1
    failed = remove(kube, items, lambda line: print(line, file=sys.stderr))
    return 1 if failed else 0


def _routes(args: argparse.Namespace, run_ip: Callable[[list[str]], tuple[int, str]]) -> int:
    from ..cluster.routes import ledgers, remove_routes

    found = [lg for lg in ledgers() if not lg.alive and lg.same_netns and (args.run is None or lg.run_id == args.run)]
    for lg in found:
        for route in lg.routes:
            print(f"{'remove' if args.yes else 'left  '}  route {' '.join(route):<64}  run {lg.run_id or '?'}  (process {lg.pid}, gone)")
    if not found:
        print("kpr cleanup: no route of a dead run on this runner", file=sys.stderr)
        return 0
    if not args.yes:
        print(f"kpr cleanup: {sum(len(lg.routes) for lg in found)} routes listed; run again with --yes to remove them", file=sys.stderr)
        return 1
    for lg in found:
        for text in remove_routes(lg, run_ip):
            print(f"deleted route {text}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace, kube_factory: Callable[[argparse.Namespace], Any] = _kube,
        run_ip: Callable[[list[str]], tuple[int, str]] | None = None) -> int:
    from ..run.leftovers import parse_duration

    if args.no_cluster and not args.routes:
        raise BadInput("--no-cluster without --routes leaves nothing to do")
    older = None
    if args.older_than is not None:
        try:
            older = parse_duration(args.older_than)
        except ValueError as e:
            raise BadInput(f"--older-than: {e}") from None
    if not args.no_cluster and args.run is None and older is None:
        raise BadInput("name one run (--run ID) or an age (--older-than DURATION): a run still going is never guessed at")
    rc = 0 if args.no_cluster else _cluster(args, kube_factory, older)
    if args.routes:
        from ..cluster.outside import run_ip as ip

        rc = max(rc, _routes(args, run_ip or ip))  # type: ignore[arg-type]
    return rc
