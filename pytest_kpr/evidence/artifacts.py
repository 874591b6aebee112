"""Reading a run's evidence files back (``kpr matrix``): validated, never trusted.

A CI gate reads artifacts that another job wrote, maybe cut short, maybe tampered with. :func:`load` reads only a
regular file (a FIFO would block, a directory or a symlink loop is refused), at most :data:`MAX_BYTES`, strict
UTF-8, JSON without NaN/Infinity, numbers of at most 20 digits, nesting to a bounded depth; then :func:`check` holds it
against the file's schema (:data:`CLUSTER_SCHEMA`, :data:`RESULTS_SCHEMA`). Every problem is one :class:`BadInput` line
that names the file and the key.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from ..core.inputs import BadInput

MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64

from .schemas import CLUSTER_SCHEMA, RESULTS_SCHEMA, UPGRADE_SCHEMA  # noqa: F401  (re-exported: kpr matrix reads them here)

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def check(value: Any, schema: dict[str, Any], where: str = "") -> str | None:
    """The first way ``value`` breaks ``schema`` (the JSON Schema subset used here), as "key: problem", or None."""
    at = where or "the top level"
    kinds = schema.get("type")
    if kinds is not None and not any(_is(value, k) for k in ([kinds] if isinstance(kinds, str) else kinds)):
        return f"{at}: expected {' or '.join([kinds] if isinstance(kinds, str) else kinds)}, got {type(value).__name__}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{at}: {_short(value)} is not one of {', '.join(map(str, schema['enum']))}"
    if "minimum" in schema and value < schema["minimum"]:
        return f"{at}: {value} is below {schema['minimum']}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                return f"{at}: missing key {key!r}"
        for key, sub in value.items():
            inner = schema.get("properties", {}).get(key, schema.get("additionalProperties"))
            if isinstance(inner, dict):
                problem = check(sub, inner, f"{where}.{key}" if where else str(key))
                if problem:
                    return problem
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problem = check(item, schema["items"], f"{where}[{i}]")
            if problem:
                return problem
    return None


def _short(value: Any, limit: int = 40) -> str:
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (iteratively: no recursion to run out of)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        if isinstance(v, dict):
            stack += [(x, d + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, d + 1) for x in v]
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 20:
        raise ValueError(f"a {len(text)}-digit number")
    return int(text)


def _float(text: str) -> float:
    f = float(text)
    if not math.isfinite(f):
        raise ValueError(f"{text[:20]} overflows")
    return f


def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """A regular file's bytes (symlinks followed, loops refused), never blocking on a FIFO or a device."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise BadInput(f"{path}: cannot read it: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file"
        raise BadInput(f"{path}: {kind}, where a file is expected")
    if st.st_size > limit:
        raise BadInput(f"{path}: {st.st_size} bytes, more than the {limit} a run's file can be")
    try:
        with open(path, "rb") as f:
            return f.read(limit + 1)
    except OSError as e:
        raise BadInput(f"{path}: cannot read it: {e.strerror}") from None


def load(path: Path, schema: dict[str, Any]) -> Any:
    """``path`` as JSON that holds ``schema``; :class:`BadInput` (one line, naming the file and the key) otherwise."""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 (byte {e.start})") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_int=_int, parse_float=_float)
    except RecursionError:
        raise BadInput(f"{path}: nested too deeply") from None
    except json.JSONDecodeError as e:
        short = e.pos >= len(text.rstrip()) - 1 or e.msg.startswith("Unterminated string")  # the document ends mid-way
        raise BadInput(f"{path}: not JSON (line {e.lineno}, column {e.colno}: {e.msg}){' -- cut short?' if short else ''}") from None
    except ValueError as e:
        raise BadInput(f"{path}: not usable JSON: {e}") from None
    if _depth(data):
        raise BadInput(f"{path}: nested more than {MAX_DEPTH} levels deep")
    problem = check(data, schema)
    if problem:
        raise BadInput(f"{path}: {problem}")
    return data
