"""Exception hierarchy. Library code raises these; the plugin turns them into one-line reports."""

from __future__ import annotations


class KprError(Exception):
    """Base class of every error pytest-kpr raises on purpose."""


class SettingsError(KprError):
    """A bad option or ini value. The plugin reports it as a pytest usage error: always one line (a newline or another
    control character in a value is written as an escape)."""

    def __init__(self, message: str) -> None:
        from .inputs import one_line

        super().__init__(one_line(message))


class Unavailable(KprError):
    """The environment cannot run the conformance suites (no Docker daemon, no kind, no API server, ...).

    ``problems``: one line each, what is missing and how to get it; the message joins them.
    """

    def __init__(self, message: str, problems: "list[str] | None" = None):
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


class ProvisioningError(KprError):
    """Creating the cluster or installing Cilium failed."""


class ClusterNotReady(KprError):
    """The datapath did not become ready within its named timeout."""


class NotKubeProxyFree(KprError):
    """The cluster does not run Cilium with kubeProxyReplacement=true."""


class FactsError(KprError):
    """The agent does not report a fact the suites' expectations depend on (never defaulted silently)."""


class NodeShellDisabled(KprError):
    """A node command was asked for while --kpr-no-node-shell is set: the test that needs it is skipped, naming why."""


class InfraError(KprError):
    """A transport failure (API server, exec stream, docker exec). Safe to retry; never a verdict."""


class CommandError(KprError):
    """A command ran and failed. Its exit code is a real result and is not retried."""

    def __init__(self, argv: list[str] | tuple[str, ...], returncode: int, stdout: str, stderr: str, where: str = ""):
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.where = where
        location = f" on {where}" if where else ""
        tail = (stderr or stdout).strip().splitlines()
        detail = f": {tail[-1]}" if tail else ""
        super().__init__(f"`{' '.join(self.argv)}`{location} exited {returncode}{detail}")


class MarkerError(KprError):
    """A kpr marker was used with arguments it does not accept."""


class ApiError(KprError):
    """The API server refused a request (not found, conflict, invalid). A result, not retried."""

    def __init__(self, status: int, reason: str, message: str):
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"API error {status} {reason}: {message}")


class SetupRefused(KprError):
    """The run cannot go on in this cluster as it was set up for it: a named namespace that does not exist, a pull Secret
    that is not there, a permission the run's user lacks, an object that is not the run's (:class:`ForeignObject`). The
    plugin stops the run at the first (exit 3, one line): a set-up problem, never a verdict on the datapath, so the gate
    does not read it as a regression."""


class ForeignObject(SetupRefused):
    """The run was about to create over, change or delete an object that is not its own (a user's, or another run's), or
    to route an address it did not allocate: refused, the object or route left as it is. The plugin ends the run with it
    (exit 3): a collision is a set-up problem, never a verdict on the datapath."""
