"""Evidence: a sink -- plain data in, files out (the store, the run record, results.json, the matrix and its gate)."""

from .store import Evidence, write_sections

__all__ = ["Evidence", "write_sections"]
