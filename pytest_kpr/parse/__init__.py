"""Pure parsers: raw tool output in, frozen dataclasses out. The only place that reads tool output."""

from .errors import ParseError
from .status import KprFeatures, StatusJSON, VersionInfo, parse_status_json, parse_version

__all__ = ["KprFeatures", "ParseError", "StatusJSON", "VersionInfo", "parse_status_json", "parse_version"]
