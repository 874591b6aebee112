"""The project's own YAML files (``clusters/versions.yaml``, ``kernels.yaml``, ``known-gaps.yaml``,
``removed-options.yaml``), read with limits and checked: a file that someone edited into a different meaning is one line
naming the file, the place and what to write instead -- never a traceback, never a silently wrong value.

YAML turns an unquoted ``1.20`` into the number 1.2 and ``on`` into true; a version read from such a file must be a
quoted string (:func:`version`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .errors import KprError

#: more than any of these files is, or will be
MAX_BYTES = 1024 * 1024
#: removed-options.yaml shares one upgrade-note sentence between a few entries; nothing needs more
MAX_ALIASES = 64


class YamlFileError(KprError):
    """A project YAML file cannot be read as what it is: one line."""


#: what each file's bytes parsed to (keyed by the bytes themselves: an edited file is parsed again), so that a process
#: running many sessions (the self-tests' in-process runs) parses each file once; handed out as a deep copy
_PARSED: dict[tuple[bytes, bool], Any] = {}


def _loader() -> Any:
    """libyaml's safe loader where PyYAML was built with it (the same documents, parsed in C), else PyYAML's own."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(path: Path, what: str, max_bytes: int = MAX_BYTES, all_documents: bool = False) -> Any:
    """``path`` parsed: at most ``max_bytes``, UTF-8, at most MAX_ALIASES aliases (many can make a small file expand into
    a huge one), no key twice in a mapping (YAML keeps the last one silently). ``all_documents``: a ``---`` separated
    stream, as a list of its documents (empty ones left out)."""
    import copy

    import yaml

    try:
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise YamlFileError(f"{path} ({what}) cannot be read: {e.strerror or e}") from None
    if len(raw) > max_bytes:
        raise YamlFileError(f"{path} ({what}) is larger than {max_bytes} bytes")
    if (raw, all_documents) in _PARSED:
        return copy.deepcopy(_PARSED[raw, all_documents])
    try:
        text = raw.decode("utf-8")
        why = structure_problem(text)
        if why:
            raise YamlFileError(f"{path} ({what}), {why}")
        if all_documents:
            parsed: Any = [d for d in yaml.load_all(text, Loader=_loader()) if d is not None]
        else:
            parsed = yaml.load(text, Loader=_loader())
        _PARSED[raw, all_documents] = copy.deepcopy(parsed)
        return parsed
    except UnicodeDecodeError as e:
        raise YamlFileError(f"{path} ({what}) is not UTF-8 text at byte {e.start}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f", line {mark.line + 1}" if mark is not None else ""
        raise YamlFileError(f"{path} ({what}){at}: not valid YAML: {getattr(e, 'problem', None) or ' '.join(str(e).split())[:120]}") from None


def structure_problem(text: str, max_aliases: int = MAX_ALIASES) -> str | None:
    """What makes YAML ``text`` unsafe or ambiguous to read, as "line N: ...", or None: more than ``max_aliases`` aliases (a
    few share a long text; many can make a small file expand into a huge one), a key given twice in one mapping (YAML
    keeps the last silently, Go's readers refuse it). Raises yaml.YAMLError for text that is not YAML."""
    import yaml

    aliases = 0
    for event in yaml.parse(text, Loader=_loader()):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > max_aliases:
                return f"line {event.start_mark.line + 1}: more than {max_aliases} aliases (*{event.anchor}); write the values out"
    key = repeated_key(yaml.compose_all(text, Loader=_loader()))
    if key is not None:
        return f"line {key.start_mark.line + 1}: the key {key.value[:60]!r} is given twice"
    return None


def repeated_key(roots: Any) -> Any:
    """The first scalar key given twice in one mapping of the composed YAML ``roots`` (document nodes, None for empty
    ones), or None. Iterative: no recursion to run out of on deep nesting."""
    import yaml

    stack = [root for root in roots if root is not None]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        return key
                    seen.add(key.value)
                stack += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
    return None


_VERSION = re.compile(r"v?\d{1,4}\.\d{1,4}(\.\d{1,6})?([-+][0-9A-Za-z.-]{1,40})?")


def version(value: Any, where: str) -> str:
    """A Cilium or Kubernetes version from a project YAML file: a string such as "1.20.5" or "1.18". A number is refused
    with the reason (YAML reads ``1.20`` as 1.2)."""
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return _bad(where, f"{value!r} is a number, not a version: YAML reads an unquoted 1.20 as 1.2; write it in quotes")
    if not isinstance(value, str) or not _VERSION.fullmatch(value.strip()):
        return _bad(where, f"{value!r} is not a version such as \"1.20.5\"")
    return value.strip()


def text(value: Any, where: str, max_len: int = 2000) -> str:
    """A non-empty string field (a source, a reason), at most ``max_len`` characters."""
    if not isinstance(value, str) or not value.strip():
        return _bad(where, f"{value!r} is not a text")
    if len(value) > max_len:
        return _bad(where, f"is longer than {max_len} characters")
    return value


def mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        _bad(where, f"is a {type(value).__name__}, not a mapping")
    return value


def sequence(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        _bad(where, f"is a {type(value).__name__}, not a list")
    return value


def _bad(where: str, why: str) -> Any:
    raise YamlFileError(f"{where}: {why}")
