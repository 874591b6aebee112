"""What a conformance suite needs from pytest-kpr, in one module: suites (the packaged ones and a user's own) import the
framework only from here, and beside it only their property's own modules (``pytest_kpr.judge.<property>``, its
observation type and judgement; the ``pytest_kpr.rules`` their expectations cite; a ``pytest_kpr.scenarios`` driver; the
shared types of ``pytest_kpr.model``). tests/test_layers.py holds them to it.

- the cluster and the run: :class:`ClusterHandle`, :class:`ClusterFacts`, :class:`Settings` (the ``kpr_settings``
  fixture); :class:`KprSession` and its labels stay exported for a user's own suites, the packaged ones never take it
- the lab: :class:`Lab` (the suite's view: its own namespace, the shared workloads; the run's id, the labels that mark an
  object as the run's, and ``track_cluster_object`` for a cluster-scoped one), its constants and helpers
- judging: :func:`holds` (the one assertion), :class:`Evidence` and :func:`family_file`, :func:`no_outside_view`
- waiting: :func:`eventually`, :func:`eventually_or_now`, :class:`Observation`, :class:`WaitTimeout`, ``clock``
- a random token for a request (``?kpr=<token>``): :func:`token` (recorded with the run, so a replay hands out the same)
- reading tool output: :func:`hp`, :func:`split_host_port`, :class:`L3n4`, :class:`RuleDump`, :func:`parse_netstat`,
  :class:`ProbeResult` (a probe's result, read back)
"""

from __future__ import annotations

from .cluster.facts import ClusterFacts
from .cluster.provider import ClusterHandle
from .core import clock
from .core.errors import ApiError
from .core.tokens import token
from .core.wait import Observation, WaitTimeout, eventually, eventually_or_now
from .evidence import Evidence, family_file
from .judge import holds
from .model.probe import ProbeResult
from .observe.lab import WEB_PORT, WEB_TARGET, Ghost, Lab, Tweak, holder_ct, holder_program, same_address
from .observe.node import NodeRules
from .observe.workloads import probe_pod
from .parse import L3n4, RuleDump
from .parse.addr import hp, split_host_port
from .parse.node import parse_netstat
from .plugin.markers import load_known_gaps
from .plugin.outcomes import no_outside_view
from .plugin.session import KprSession
from .run.ownership import OWNER_LABEL, OWNER_VALUE, RUN_LABEL
from .run.settings import Settings

__all__ = [
    "ClusterFacts", "ClusterHandle", "clock", "Observation", "WaitTimeout", "eventually", "eventually_or_now", "Evidence",
    "family_file", "holds", "WEB_PORT", "WEB_TARGET", "Ghost", "Lab", "Tweak", "holder_ct", "holder_program", "same_address",
    "NodeRules", "probe_pod", "L3n4", "RuleDump", "hp", "split_host_port", "parse_netstat", "ProbeResult", "load_known_gaps",
    "no_outside_view", "OWNER_LABEL", "OWNER_VALUE", "RUN_LABEL", "KprSession", "Settings", "token", "ApiError",
]
