"""Kubernetes access behind one small interface (:class:`KubeAPI`), real or fake."""

from .api import ExecResult, KubeAPI, api_version_of

__all__ = ["ExecResult", "KubeAPI", "api_version_of"]
