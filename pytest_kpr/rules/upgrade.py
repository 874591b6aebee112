"""Which upgrades pytest-kpr refuses before anything changes, and the sentence of Cilium's that decides it.

cilium/cilium Documentation/operations/upgrade.rst@a43d22be:
"The only tested upgrade and rollback path is between consecutive minor releases."
"""

from __future__ import annotations

from ..core.versions import Version

SRC_UPGRADE_PATH = ("cilium/cilium Documentation/operations/upgrade.rst@a43d22be: \"The only tested upgrade and rollback path is "
                    "between consecutive minor releases.\"")


def version_refusal(from_text: str, to_text: str) -> str | None:
    """Why upgrading ``from`` to ``to`` is refused, or None (one minor at a time, upwards)."""
    a, b = Version.parse(from_text), Version.parse(to_text)
    if (b.major, b.minor, b.patch) <= (a.major, a.minor, a.patch):
        return f"Cilium {to_text} is not newer than the from version {from_text} (use --kpr-downgrade to measure a rollback)"
    if b.major != a.major or b.minor - a.minor > 1:
        return (f"Cilium {to_text} is more than one minor ahead of {from_text}: upgrade one minor at a time "
                f"(Cilium's upgrade guide: \"The only tested upgrade and rollback path is between consecutive minor releases.\")")
    return None
