"""Hooks other plugins and conftest files can implement to plug in providers and API clients."""

from __future__ import annotations

from typing import Any

from pluggy import HookspecMarker

spec = HookspecMarker("pytest")


@spec(firstresult=True)
def pytest_kpr_provider(config: Any, settings: Any, timeouts: Any, kube_factory: Any) -> Any:
    """Return a :class:`~pytest_kpr.cluster.provider.Provider` to use instead of the built-in kind/existing ones.

    A VM-per-kernel provider, or the in-memory fake cluster of the self-tests, plugs in here::

        def pytest_kpr_provider(config, settings, timeouts, kube_factory):
            return MyVmProvider(settings)
    """


@spec(firstresult=True)
def pytest_kpr_kube_client(config: Any, kubeconfig: Any, context: Any) -> Any:
    """Return a :class:`~pytest_kpr.k8s.api.KubeAPI` for a kubeconfig/context, instead of the kubernetes client."""
