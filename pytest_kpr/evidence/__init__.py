"""Evidence: a sink -- plain data in, files out (the store, the run record, results.json, the matrix and its gate)."""

from .store import Evidence, failure_bundle

__all__ = ["Evidence", "failure_bundle"]
