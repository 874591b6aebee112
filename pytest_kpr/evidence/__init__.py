"""Evidence: a sink -- plain data in, files out (the store, the run record, results.json, the matrix and its gate)."""

from .store import Evidence, family_file, write_sections

__all__ = ["Evidence", "family_file", "write_sections"]
