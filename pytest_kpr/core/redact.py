"""What a run keeps of what the cluster tells it: the one filter in front of every recording and every evidence file.

Two halves, both here so that every seam uses the same:

- :func:`clean` walks an API object (or any JSON-able answer) and keeps only what the judges and a replay read. The
  fields that carry free-form user data are kept by **allow-list**: a Secret's ``data``/``stringData`` and a
  ConfigMap's ``data``/``binaryData`` keep their keys, never a value; an ``env`` entry keeps its name and its
  ``valueFrom`` reference, never its ``value``; an annotation keeps its value only under the prefixes the suites and
  Cilium read (:data:`ANNOTATION_PREFIXES`: ``kubectl.kubernetes.io/last-applied-configuration``, which repeats a whole
  object as applied, is not among them). Any other key that names a credential (``password``, ``DB_PASSWORD``,
  ``client-secret``, ``token``, ``auth``, ...) loses its string value. Typed fields (ports, addresses, selectors,
  status) are kept as they are: they are what the judges read.
- :func:`redact_text` is for what has no structure (an exec's output, a log, an error message, an evidence file): PEM
  blocks and base64-wrapped PEM, JWTs (also wrapped over lines), ``Authorization``/``Basic``/``Bearer`` credentials,
  credentials in URLs (``https://user:pass@``), ``key: value`` and ``KEY=value`` pairs whose key names a credential
  (any case, as a YAML list item or JSON, escaped JSON included), a docker config's base64, and well-known token
  shapes (GitHub, GitLab, Slack, AWS access keys).

Every value taken out becomes :data:`REDACTED`: no digest, since a digest of a short password is one dictionary away.
"""

from __future__ import annotations

import enum
import re
from dataclasses import asdict, is_dataclass
from typing import Any

REDACTED = "<redacted>"

#: annotation keys whose values are kept (the ones the suites, the fake's agents and Cilium read); any other annotation
#: keeps its key and loses its value
ANNOTATION_PREFIXES = ("service.cilium.io/", "lbipam.cilium.io/", "io.cilium/", "kpr.cilium.io/", "service.kubernetes.io/",
                       "endpoints.kubernetes.io/", "endpointslice.kubernetes.io/")

#: a key whose value is a credential wherever it appears (compared case-insensitively, anywhere in the key)
_SECRET_WORDS = r"passw(?:or)?d|secret|token|api[-_]?key|access[-_]?key|private[-_]?key|client[-_]?key|credential|" \
                r"client[-_]?certificate|cert[-_]?data"
_SECRET_KEY = re.compile(rf"(?i)(?:{_SECRET_WORDS})|^(?:auth|authorization|proxy-authorization)$")
#: ... except a key that holds only a reference to one (a Secret's name, a file's path)
_REFERENCE_KEY = re.compile(r"(?i)(?:pull[-_]?secrets?|secret[-_]?(?:name|ref|key[-_]?ref)|(?:token|secret|key)[-_]?(?:file|path)|"
                            r"tokenexpirationseconds|automountserviceaccounttoken)$")

_B64 = r"[A-Za-z0-9+/=]"
_B64URL = r"[A-Za-z0-9_-]"


def _wrapped(chars: str) -> str:
    """A wrapped base64 block goes on over lines of its own (at least 16 characters each, nothing else on them)."""
    return rf"(?:\n[ \t]*{chars}{{16,}}(?=\s|$))*"


_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.S)
#: "-----BEGIN" base64-encoded at each of the three alignments, and the base64 of a docker config's '{"auths":' (compact,
#: spaced, indented by two spaces or a tab)
_B64_PEM = re.compile(rf"(?:LS0tLS1CRUdJT|0tLS0tQkVHSU|tLS0tLUJFR0lO|eyJhdXRocyI6|eyAiYXV0aHMiOi|ewogICJhdXRocyI6|ewoJImF1dGhzIj)"
                      rf"{_B64}*{_wrapped(_B64)}")
_JWT = re.compile(rf"eyJ(?:{_B64URL}|\n[ \t]*){{8,}}\.(?:{_B64URL}|\n[ \t]*){{8,}}\.{_B64URL}*{_wrapped(_B64URL)}")
#: a scheme's credential holds a digit or a base64 sign ("basic connectivity" is prose, "Basic dXNlcjpwYXNz" is not)
_SCHEME_CRED = re.compile(r"(?i)\b(basic|bearer)(\s+)(?=[A-Za-z._~-]*[0-9+/=])[A-Za-z0-9._~+/=-]{8,}")
#: an Authorization header's value: a quoted string (JSON, escaped JSON) or the rest of the line (or of the string)
_AUTH_LINE = re.compile(r"(?im)(\b(?:proxy-)?authorization(?:\\?[\"'])?[ \t]*[:=][ \t]*)"
                        r"(\\\"(?:[^\"\\]|\\[^\"])*\\\"|\"(?:[^\"\\]|\\.)*\"|'[^'\n]*'|[^\r\n\"]*)")
_URL_CRED = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@\"']+:[^/\s@\"']*@")
_TOKEN_SHAPES = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|"
                           r"xox[abprs]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16})\b")
#: ``key: value``, ``KEY=value``, ``- password: x``, ``"token": "x"``, ``\\"token\\":\\"x\\"`` (JSON in a JSON string),
#: ``--client-secret=x``: the key names a credential (any case); the value goes to the end of the quoted string or word
_PAIR = re.compile(
    rf"(?i)(?P<key>[A-Za-z0-9_.-]*(?:{_SECRET_WORDS}|\bauth\b)[A-Za-z0-9_.-]*)(?P<sep>(?:\\?[\"'])?[ \t]*[:=][ \t]*)"
    r"(?P<val>\\\"(?:[^\"\\]|\\[^\"])*\\\"|\"(?:[^\"\\]|\\.)*\"|'[^'\n]*'|[^\s\"',;{}&\[\]]+)")

#: a text without any of these (lower-cased) holds nothing :func:`redact_text` replaces (checked first: most have none)
_MARKERS = ("-----begin", "eyj", "eyai", "ewog", "ewoj", "ls0tls1", "0tls0t", "tls0tl", "bearer", "basic", "passw", "secret", "token", "apikey",
            "api_key", "api-key", "accesskey", "access_key", "access-key", "privatekey", "private_key", "private-key",
            "clientkey", "client_key", "client-key", "credential", "certificate", "cert_data", "cert-data", "certdata",
            "auth", "://", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "akia", "asia")


def redact_text(text: str) -> str:
    """Every credential form :mod:`this module <pytest_kpr.core.redact>` knows, in free text, replaced by :data:`REDACTED`."""
    low = text.lower()
    if not any(m in low for m in _MARKERS):
        return text
    text = _PEM.sub(REDACTED, text)
    text = _B64_PEM.sub(REDACTED, text)
    text = _JWT.sub(REDACTED, text)
    text = _AUTH_LINE.sub(_auth, text)
    text = _SCHEME_CRED.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _URL_CRED.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    return _PAIR.sub(_pair, text)


def _quoted(val: str) -> str:
    """:data:`REDACTED` in the quotes ``val`` had (a JSON string's, an escaped JSON string's, a shell's), or none."""
    quote = '\\"' if val.startswith('\\"') else val[0] if val[:1] in ("\"", "'") else ""
    return f"{quote}{REDACTED}{quote}"


def _auth(m: re.Match[str]) -> str:
    return m.group(0) if REDACTED in m.group(2) or not m.group(2).strip() else m.group(1) + _quoted(m.group(2))


def _pair(m: re.Match[str]) -> str:
    key, val = m.group("key"), m.group("val")
    if _REFERENCE_KEY.search(key) or REDACTED in val or val in ("true", "false", "null", "[]", "{}", '""'):
        return m.group(0)
    return f"{key}{m.group('sep')}{_quoted(val)}"


def secret_key(key: str) -> bool:
    """Whether a key's string value is a credential wherever it appears (``password``, ``DB_PASSWORD``, ``clientSecret``,
    ``client-key-data``, ``auth``...), a reference to one (``secretName``, ``imagePullSecrets``) excepted."""
    return bool(_SECRET_KEY.search(key)) and not _REFERENCE_KEY.search(key)


def plain(value: Any) -> Any:
    """A JSON-able form of an answer: dataclasses (an ExecResult, a ProbeResult) as their fields, enums as their value."""
    if hasattr(value, "to_json") and callable(value.to_json):
        return value.to_json()
    if is_dataclass(value) and not isinstance(value, type):
        return {k: plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _values_only(mapping: Any) -> Any:
    return {str(k): REDACTED for k in mapping} if isinstance(mapping, dict) else REDACTED


def _annotations(value: Any) -> Any:
    if not isinstance(value, dict):
        return clean(value)
    return {str(k): clean(v) if str(k).startswith(ANNOTATION_PREFIXES) else REDACTED for k, v in value.items()}


def _env(value: Any) -> Any:
    if not isinstance(value, list):
        return clean(value)
    return [{k: (REDACTED if k == "value" and v not in (None, "") else clean(v)) for k, v in e.items()} if isinstance(e, dict)
            else clean(e) for e in value]


#: kind -> the fields whose values are never kept (their keys are)
_DATA_FIELDS = {"Secret": ("data", "stringData"), "ConfigMap": ("data", "binaryData")}


def clean(value: Any) -> Any:
    """What a recording or an evidence file keeps of ``value`` (made plain JSON on the way): see the module's text. A new
    object; ``value`` is not changed."""
    if isinstance(value, str):
        return redact_text(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict):
        dropped = _DATA_FIELDS.get(value.get("kind"), ())  # type: ignore[arg-type]
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            if key in dropped:
                out[key] = _values_only(v)
            elif key == "annotations":
                out[key] = _annotations(v)
            elif key == "env":
                out[key] = _env(v)
            elif v not in (None, "", [], {}) and isinstance(v, (str, list)) and secret_key(key):
                out[key] = REDACTED if isinstance(v, str) else [REDACTED if isinstance(e, str) else clean(e) for e in v]
            else:
                out[key] = clean(v)
        return out
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return clean(plain(value))
