"""How the settings written as comma-separated lists are read: API keys (with their principals
and display names), CORS origins, graphs and webhook hosts. Each returns a non-string value
unchanged (a value given in code), and raises ``ValueError`` with the fix when an entry is
malformed."""

from __future__ import annotations

import ipaddress
import re

from consentry.principal import Principal

__all__ = ["parse_api_keys", "parse_cors_origins", "parse_graphs", "parse_webhook_hosts"]

_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")
_DISPLAY_NAME = re.compile(r"[^\x00-\x1f\x7f,=]{1,128}")
# An origin as a browser sends it: scheme, host (a name, or an IPv6 address) and port, no path.
_ORIGIN = re.compile(r"https?://(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
_GRAPH_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# `package.module:attr`, or `path/to/file.py:attr` (no comma, `=` or `:` in the path).
_IMPORT_PATH = re.compile(r"(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*|[^,=:]+\.py):[A-Za-z_]\w*")


def parse_api_keys(raw: object) -> object:
    """``CONSENTRY_API_KEYS``: ``token=tenant:user[:Display Name]``, comma-separated."""
    if not isinstance(raw, str):
        return raw
    keys: dict[str, Principal] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        # The owner never contains "=", a token may (base64 padding): split at the last one.
        token, _, owner = item.rpartition("=")
        tenant, _, rest = owner.partition(":")
        user, named, name = rest.partition(":")
        token, tenant, user, name = token.strip(), tenant.strip(), user.strip(), name.strip()
        if not (token and _NAME.fullmatch(tenant) and _NAME.fullmatch(user)):
            raise ValueError(
                "CONSENTRY_API_KEYS entries look like `token=tenant:user` or "
                "`token=tenant:user:Display Name`, separated by commas; tenant and user use "
                "letters, digits and . _ @ -"
            )
        if named and not _DISPLAY_NAME.fullmatch(name):
            raise ValueError(
                f"CONSENTRY_API_KEYS: the display name of {tenant}:{user} must be 1 to 128 "
                "printable characters (no comma or =)"
            )
        if token in keys:
            raise ValueError("CONSENTRY_API_KEYS names the same token twice")
        keys[token] = Principal(tenant, user, name or None)
    return keys


def parse_cors_origins(raw: object) -> object:
    """``CONSENTRY_CORS_ORIGINS``: origins (scheme, host, port), or ``*``."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list):
        return raw
    origins = [str(item).strip() for item in items if str(item).strip()]
    for origin in origins:
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ValueError(
                f"CONSENTRY_CORS_ORIGINS: {origin!r} is not an origin: write scheme, host "
                "and port only, like `http://localhost:5173` (no path, no trailing /), or `*`"
            )
    if "*" in origins and len(origins) > 1:
        raise ValueError("CONSENTRY_CORS_ORIGINS is either `*` or a list of origins")
    return origins


def parse_graphs(raw: object) -> object:
    """``CONSENTRY_GRAPHS``: ``name=package.module:attr`` or ``name=path/to/file.py:attr``,
    comma-separated."""
    if isinstance(raw, str):
        items = [part.strip() for part in raw.split(",") if part.strip()]
        pairs = [tuple(part.strip() for part in item.partition("=")[::2]) for item in items]
    elif isinstance(raw, dict):
        pairs = [(str(name), str(path)) for name, path in raw.items()]
    else:
        return raw
    graphs: dict[str, str] = {}
    for name, path in pairs:
        if not (_GRAPH_NAME.fullmatch(name) and _IMPORT_PATH.fullmatch(path)):
            raise ValueError(
                f"CONSENTRY_GRAPHS entry {name or '?'}={path or '?'} is not "
                "`name=package.module:attr` or `name=path/to/file.py:attr`: names use letters, "
                "digits, _ and - (at most 64), and attr names a graph, a StateGraph, a "
                "GraphSpec or a function returning one (docs/graphs.md)"
            )
        if name in graphs:
            raise ValueError(f"CONSENTRY_GRAPHS names the graph {name!r} twice")
        graphs[name] = path
    return graphs


# A host name (letters, digits, - and . ; `*.` first for its subdomains), an IPv4 or IPv6
# address (brackets optional), or a network in CIDR form.
_WEBHOOK_HOST = re.compile(
    r"(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[?[0-9A-Fa-f:.]+\]?(?:/\d{1,3})?"
)


def parse_webhook_hosts(raw: object) -> object:
    """``CONSENTRY_WEBHOOK_HOSTS``: host names, ``*.example.com``, addresses or networks,
    comma-separated."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list):
        return raw
    hosts = [str(item).strip() for item in items if str(item).strip()]
    for host in hosts:
        network = host.strip("[]").split("/")[0] if ":" in host or "/" in host else None
        valid = _WEBHOOK_HOST.fullmatch(host) is not None
        if valid and network is not None:
            try:
                ipaddress.ip_network(host.strip("[]"), strict=False)
            except ValueError:
                valid = False
        if not valid:
            raise ValueError(
                f"CONSENTRY_WEBHOOK_HOSTS: {host!r} is not a host: write host names "
                "(`hooks.example.com`, `*.example.com` for its subdomains), IP addresses "
                "(`10.0.0.7`, `::1`) or networks (`10.0.0.0/24`), separated by commas"
            )
    return hosts
