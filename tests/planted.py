"""Every form of a secret the self-tests plant in the run's seams: none may reach a recording or an evidence file.

``TEXTS`` are free text as an exec, a log, an error or a node command hands it back; ``OBJECTS`` are API objects as the
cluster answers them. Each carries the secret it hides (``SECRETS``: every one of them, to look for in the bytes).
The forms are those a red team planted (issue 57) and the ones we could add: a pull Secret through
``last-applied-configuration``, env values, URL credentials, ``Authorization: Basic``, upper-case keys, YAML list items,
``client-secret``, base64-wrapped PEM, JWTs split over lines, a docker config's base64, escaped JSON, cloud tokens.
"""

from __future__ import annotations

import base64
import json
from typing import Any

KEY_PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAsecretsecretsecret\n-----END RSA PRIVATE KEY-----"
JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IkpXVCJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW0ifQ.c2lnbmF0dXJlc2VjcmV0"
CLIENT_KEY_DATA = base64.b64encode(KEY_PEM.encode()).decode()
DOCKERCONFIG = base64.b64encode(json.dumps({"auths": {"ghcr.io": {"auth": "dXNlcjpodW50ZXIy"}}}).encode()).decode()
DOCKERCONFIG_PRETTY = base64.b64encode(json.dumps({"auths": {"r.io": {"auth": "cHJldHR5LWF1dGg="}}}, indent=2).encode()).decode()


def _wrap(text: str, width: int = 64, indent: str = "    ") -> str:
    return "\n".join(indent + text[i:i + width] for i in range(0, len(text), width))


def _b64_at(offset: int) -> tuple[str, str]:
    """A base64-wrapped PEM key with ``offset`` bytes before it (the three alignments of '-----BEGIN')."""
    raw = base64.b64encode(b"x" * offset + KEY_PEM.encode()).decode()
    return raw, raw[len(raw) // 2:len(raw) // 2 + 24]


_SECRET_OBJECT = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                  "metadata": {"name": "regcred", "namespace": "creds"}, "data": {".dockerconfigjson": "c2VjcmV0LWRvY2tlcmNmZw=="}}

#: (id, text, the secret in it)
TEXTS: list[tuple[str, str, str]] = [
    ("pem", f"before\n{KEY_PEM}\nafter", "MIIEpAIBAAKCAQEAsecretsecretsecret"),
    ("pem-unterminated", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcunterminated", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcunterminated"),
    ("jwt", f"token {JWT} end", JWT),
    ("jwt-split-at-dots", f"id: {JWT.replace('.', '.' + chr(10) + '  ')}", "c2lnbmF0dXJlc2VjcmV0"),
    ("jwt-wrapped", "token:\n" + _wrap(JWT, 40), JWT[40:80]),
    ("bearer", "GET / Authorization: Bearer bearer-secret-abcdef123", "bearer-secret-abcdef123"),
    ("basic-header", "Authorization: Basic dXNlcjpodW50ZXIyLWJhc2lj", "dXNlcjpodW50ZXIyLWJhc2lj"),
    ("basic-lower", "curl -H 'authorization: basic Ym9iOnNlY3JldC1sb3dlcg=='", "Ym9iOnNlY3JldC1sb3dlcg=="),
    ("basic-bare", "proxy said Basic YWxpY2U6YmFyZS1iYXNpYw==", "YWxpY2U6YmFyZS1iYXNpYw=="),
    ("proxy-authorization", "Proxy-Authorization: Negotiate negotiate-secret-0001", "negotiate-secret-0001"),
    ("url-credentials", "pulling https://robot:url-pass-4411@registry.example.com/v2/", "url-pass-4411"),
    ("url-credentials-git", "remote: git+ssh://deploy:git-secret-77@git.example.com/repo", "git-secret-77"),
    ("kubeconfig-key-data", f"users:\n- name: kind\n  user:\n    client-key-data: {CLIENT_KEY_DATA}\n", CLIENT_KEY_DATA),
    ("kubeconfig-cert-data", "    client-certificate-data: Q0VSVFNFQ1JFVC1jZXJ0", "Q0VSVFNFQ1JFVC1jZXJ0"),
    ("kubeconfig-token", "    token: plain-token-secret-1234", "plain-token-secret-1234"),
    ("yaml-list-item", "env:\n- password: list-item-pass-9", "list-item-pass-9"),
    ("yaml-list-item-token", "  - token: list-token-secret-8", "list-token-secret-8"),
    ("upper-env", "DB_PASSWORD=upper-env-pass-1", "upper-env-pass-1"),
    ("upper-colon", "API_TOKEN: upper-colon-token-2", "upper-colon-token-2"),
    ("upper-key", "PASSWORD=shouting-pass-3", "shouting-pass-3"),
    ("aws-secret-env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"),
    ("aws-access-key-id", "key id AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE"),
    ("client-secret", "client-secret: oidc-client-secret-5", "oidc-client-secret-5"),
    ("client_secret-query", "POST /token client_id=kpr&client_secret=query-secret-6&grant=x", "query-secret-6"),
    ("clientSecret-json", '{"clientId": "kpr", "clientSecret": "camel-secret-7"}', "camel-secret-7"),
    ("cli-flag", "argv: --password=flag-pass-10 --verbose", "flag-pass-10"),
    ("cli-flag-token", "kubectl --token=flag-token-11 get pods", "flag-token-11"),
    ("json-password", '{"username": "u", "password": "json-pass-12"}', "json-pass-12"),
    ("json-escaped", '{"last": "{\\"password\\":\\"escaped-pass-13\\"}"}', "escaped-pass-13"),
    ("last-applied-text", "kubectl.kubernetes.io/last-applied-configuration: "
     + json.dumps(json.dumps({**_SECRET_OBJECT, "stringData": {"password": "applied-pass-14"}})), "applied-pass-14"),
    ("single-quoted", "password: 'quoted-pass-15'", "quoted-pass-15"),
    ("double-quoted-spaces", 'password: "with spaces pass-16"', "with spaces pass-16"),
    ("api-key", "X-API-Key: api-key-secret-17", "api-key-secret-17"),
    ("apikey-json", '"apiKey":"apikey-secret-18"', "apikey-secret-18"),
    ("private-key-kv", "private_key=private-secret-19", "private-secret-19"),
    ("credentials-kv", "credentials: cred-secret-20", "cred-secret-20"),
    ("dockerconfig-auth", '{"auths":{"ghcr.io":{"auth":"dXNlcjpkb2NrZXItYXV0aC0yMQ=="}}}', "dXNlcjpkb2NrZXItYXV0aC0yMQ=="),
    ("dockerconfig-b64", f".dockerconfigjson: {DOCKERCONFIG}", DOCKERCONFIG[12:40]),
    ("dockerconfig-b64-pretty", f"data: {DOCKERCONFIG_PRETTY}", DOCKERCONFIG_PRETTY[16:40]),
    ("pem-b64-0", f"key: {_b64_at(0)[0]}", _b64_at(0)[1]),
    ("pem-b64-1", f"blob {_b64_at(1)[0]}", _b64_at(1)[1]),
    ("pem-b64-2", f"blob {_b64_at(2)[0]}", _b64_at(2)[1]),
    ("pem-b64-wrapped", "tls.key: |\n" + _wrap(CLIENT_KEY_DATA), CLIENT_KEY_DATA[64:128]),
    ("github-token", "GITHUB=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("github-pat", "using github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("gitlab-token", "glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789"),
    ("slack-token", "hook xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    ("secret-kv", "secret=kv-secret-22", "kv-secret-22"),
    ("passwd", "passwd: passwd-secret-23", "passwd-secret-23"),
    ("refresh-token", "refresh-token: refresh-secret-24", "refresh-secret-24"),
]

#: (id, object, the secret in it)
OBJECTS: list[tuple[str, dict[str, Any], str]] = [
    ("secret-data", _SECRET_OBJECT, "c2VjcmV0LWRvY2tlcmNmZw=="),
    ("secret-stringdata", {"kind": "Secret", "metadata": {"name": "s"}, "stringData": {"db-conn": "stringdata-secret-30"}},
     "stringdata-secret-30"),
    ("secret-list", {"kind": "SecretList", "items": [{**_SECRET_OBJECT, "data": {"x": "c2VjcmV0LWluLWxpc3Q="}}]}, "c2VjcmV0LWluLWxpc3Q="),
    ("configmap-data", {"kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"settings.ini": "dsn=postgres://u:cm-pass-31@db/x"}},
     "cm-pass-31"),
    ("configmap-plain-value", {"kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"connection": "cm-opaque-value-32"}},
     "cm-opaque-value-32"),
    ("configmap-binary", {"kind": "ConfigMap", "metadata": {"name": "bin"}, "binaryData": {"k": "YmluYXJ5LXNlY3JldC0zMw=="}},
     "YmluYXJ5LXNlY3JldC0zMw=="),
    ("last-applied", {"kind": "Secret", "metadata": {"name": "regcred", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps({**_SECRET_OBJECT, "data": {"x": "bGFzdC1hcHBsaWVkLTM0"}})}}},
     "bGFzdC1hcHBsaWVkLTM0"),
    ("last-applied-on-a-pod", {"kind": "Pod", "metadata": {"name": "p", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": '{"spec":{"containers":[{"env":[{"name":"K","value":"la-env-35"}]}]}}'}}},
     "la-env-35"),
    ("annotation-other", {"kind": "Service", "metadata": {"name": "s", "annotations": {"example.com/db": "annotation-opaque-36"}}},
     "annotation-opaque-36"),
    ("env-value", {"kind": "Pod", "spec": {"containers": [{"name": "c", "env": [{"name": "CONN", "value": "env-opaque-37"}]}]}},
     "env-opaque-37"),
    ("env-in-template", {"kind": "DaemonSet", "spec": {"template": {"spec": {"initContainers": [
        {"name": "i", "env": [{"name": "X", "value": "template-env-38"}]}]}}}}, "template-env-38"),
    ("upper-key", {"config": {"DB_PASSWORD": "object-upper-39"}}, "object-upper-39"),
    ("client-secret-key", {"oidc": {"client-secret": "object-client-secret-40"}}, "object-client-secret-40"),
    ("token-list", {"tokens": ["object-token-41"]}, "object-token-41"),
    ("kubeconfig", {"users": [{"user": {"client-key-data": "a2V5LWRhdGEtNDI=", "token": "object-token-42"}}]}, "object-token-42"),
    ("auth-header", {"headers": {"Authorization": "Basic b2JqZWN0LWJhc2ljLTQz"}}, "b2JqZWN0LWJhc2ljLTQz"),
    ("args-flag", {"kind": "Pod", "spec": {"containers": [{"args": ["--client-secret=object-args-44"]}]}}, "object-args-44"),
    ("dockercfg-auth", {"auths": {"r.io": {"auth": "b2JqZWN0LWF1dGgtNDU="}}}, "b2JqZWN0LWF1dGgtNDU="),
]

#: every planted secret
SECRETS: list[str] = [s for _, _, s in TEXTS] + [s for _, _, s in OBJECTS]

#: every text form in one text, every object in one list: what a seam answers when a test plants them all at once
ALL_TEXT = "\n".join(t for _, t, _ in TEXTS) + "\n"
ALL_OBJECTS = [o for _, o, _ in OBJECTS]


def found(data: bytes | str) -> list[str]:
    """The planted secrets in ``data`` (none, when the filter works)."""
    text = data.decode(errors="replace") if isinstance(data, bytes) else data
    return [s for s in SECRETS if s in text]
