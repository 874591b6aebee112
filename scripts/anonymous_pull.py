#!/usr/bin/env python3
"""Whether a published image can be pulled with no credentials, as every caller's cluster will pull it.

    scripts/anonymous_pull.py REGISTRY/NAME[:TAG]@sha256:DIGEST

The registry's anonymous pull token (``GET https://REGISTRY/token?scope=repository:NAME:pull``), then the manifest
(``HEAD https://REGISTRY/v2/NAME/manifests/DIGEST``), as a container runtime asks them (the OCI distribution spec's
pull; ghcr.io answers a private package's token request with 401/403). publish.yml runs it before the wheel that pins the
image is published: a new GHCR package is private, and a wheel pinned to it would send every caller's kind cell to a
pull that is refused. Exit 0 pullable, 1 not (one line: the step to take), 2 usage.

``KPR_REGISTRY_ANSWERS`` (the act tier's and the self-tests' stand-in) names a JSON file of canned answers, URL ->
[status, body]; unset, the registry is asked over HTTPS.
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

#: REGISTRY/NAME[:TAG]@sha256:DIGEST (probe-image.yml gives the tag and the digest; the digest is what is pulled)
IMAGE = re.compile(r"^(?P<registry>[a-z0-9.-]+(?::\d+)?)/(?P<name>[a-z0-9._/-]+?)(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                   r"@(?P<digest>sha256:[0-9a-f]{64})$")
ACCEPT = ", ".join(["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json",
                    "application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"])


def ask(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, str]:
    canned = os.environ.get("KPR_REGISTRY_ANSWERS")
    if canned:  # URL patterns (fnmatch) -> [status, body], the first that matches
        import fnmatch

        with open(canned) as f:
            answers = json.load(f)
        status, body = next((a for pattern, a in answers.items() if fnmatch.fnmatchcase(url, pattern)), [404, "no stand-in answer"])
        return int(status), str(body)
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read(65536).decode(errors="replace") if method == "GET" else ""
    except urllib.error.HTTPError as e:
        return e.code, ""


def check(image: str) -> str | None:
    """None when ``image`` can be pulled anonymously, else the one line saying why not and what to do."""
    m = IMAGE.match(image)
    if not m:
        raise ValueError(f"{image!r} is not REGISTRY/NAME[:TAG]@sha256:DIGEST")
    registry, name, digest = m["registry"], m["name"], m["digest"]
    scope = urllib.parse.quote(f"repository:{name}:pull", safe=":/")
    status, body = ask(f"https://{registry}/token?scope={scope}&service={registry}")
    private = (f"{image} cannot be pulled anonymously: its package is private (a new GHCR package is). Make it public "
               f"(GitHub: the package {name.rsplit('/', 1)[-1]} -> Package settings -> Change visibility -> Public), then re-run "
               "this job")
    if status in (401, 403):
        return private
    if status != 200:
        return f"{image}: the registry's token endpoint answered {status}: not publishing a wheel that pins an image no one may pull"
    try:
        token = json.loads(body).get("token") or json.loads(body).get("access_token") or ""
    except ValueError:
        token = ""
    status, _ = ask(f"https://{registry}/v2/{name}/manifests/{digest}", "HEAD", {"Authorization": f"Bearer {token}", "Accept": ACCEPT})
    if status in (401, 403):
        return private
    if status != 200:
        return f"{image}: the manifest answered {status} to an anonymous pull (not pushed, or another digest)"
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: scripts/anonymous_pull.py REGISTRY/NAME[:TAG]@sha256:DIGEST", file=sys.stderr)
        return 2
    try:
        why = check(argv[0])
    except ValueError as e:
        print(f"anonymous_pull: {e}", file=sys.stderr)
        return 2
    if why:
        print(f"::error::{why}")
        return 1
    print(f"{argv[0]} can be pulled anonymously")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
