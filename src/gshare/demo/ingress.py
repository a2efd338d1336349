"""The demo's ingress: nginx configuration built from the operator's Ingress objects the way
ingress-nginx builds it. Pure: Kubernetes objects in, configuration text out.

What matters is the access path that guards every session page. For each request to a session
host, nginx asks the Ingress's `auth-url` with an `auth_request` subrequest that carries the
headers ingress-nginx sends (`X-Original-URL`, `X-Original-Method`, `X-Auth-Request-Redirect`,
`X-Sent-From` …) and the browser's own headers, the cookie among them; a 2xx lets the request
through, with the check's `Set-Cookie` passed back to the browser (on every answer when
`auth-always-set-cookie` says so) and the headers named in
`auth-response-headers` passed on to the session; a 403 is answered as the check says, and so
is a 401 unless `auth-signin` names where to send the browser instead: a 302 there, with the
check's `Set-Cookie` and the address asked for in the `auth-signin-redirect-param`. (Debian's
nginx cannot escape that address as ingress-nginx's `$escaped_request_uri` does: it goes last,
as it was asked for, and the API reads it either way.)

Every value taken from an Ingress is checked against a strict pattern before it reaches the
configuration: an annotation is free text, and a quote, semicolon or brace in one would change
what nginx does (ingress-nginx has had exactly such injections).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

AUTH_URL = "nginx.ingress.kubernetes.io/auth-url"
AUTH_RESPONSE_HEADERS = "nginx.ingress.kubernetes.io/auth-response-headers"
BODY_SIZE = "nginx.ingress.kubernetes.io/proxy-body-size"
READ_TIMEOUT = "nginx.ingress.kubernetes.io/proxy-read-timeout"
ALWAYS_SET_COOKIE = "nginx.ingress.kubernetes.io/auth-always-set-cookie"
AUTH_METHOD = "nginx.ingress.kubernetes.io/auth-method"
AUTH_SIGNIN = "nginx.ingress.kubernetes.io/auth-signin"
AUTH_SIGNIN_PARAM = "nginx.ingress.kubernetes.io/auth-signin-redirect-param"
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

_HOST = re.compile(r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# A URL with none of nginx's special characters (quotes, `;`, braces, `$`, spaces, `\`).
_URL = re.compile(r"^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/%\-]*)?$")
_HEADER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
_PARAM = re.compile(r"^[A-Za-z0-9_]{1,32}$")
_SIZE = re.compile(r"^[0-9]{1,6}[kKmMgG]?$")
# Where a program listens: an IPv4 address and a port (a pod's address, or loopback).
_OCTET = r"(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])"
_UPSTREAM = re.compile(rf"^{_OCTET}(\.{_OCTET}){{3}}:[0-9]{{1,5}}$")
DEFAULT_BODY_SIZE = "1m"
DEFAULT_READ_TIMEOUT = 60

Json = dict[str, Any]


class Refused(ValueError):
    """An Ingress the demo's nginx will not serve, and why."""


@dataclass(frozen=True)
class Route:
    """One session host: where its access check is, and the address its program listens on,
    `host:port` (None while its pod has no program, which nginx answers with 503 after the
    access check)."""

    host: str
    auth_url: str
    response_headers: tuple[str, ...] = ()
    body_size: str = DEFAULT_BODY_SIZE
    read_timeout: int = DEFAULT_READ_TIMEOUT
    always_set_cookie: bool = False
    auth_method: str | None = None  # the subrequest repeats the request's method when None
    signin_url: str | None = None  # a 401 is answered as it is when None
    signin_param: str = "rd"
    service: str = ""
    upstream: str | None = None


def route_of(ingress: Json) -> Route:
    """The route an Ingress asks for: its one host and path `/`, its auth-url and the proxy
    annotations the operator sets. Raises Refused for anything else."""
    meta = ingress.get("metadata") or {}
    notes = meta.get("annotations") or {}
    rules = (ingress.get("spec") or {}).get("rules") or []
    if len(rules) != 1:
        raise Refused("one rule is expected")
    host = str(rules[0].get("host") or "")
    if not _HOST.match(host):
        raise Refused(f"the host {host[:80]!r} is not a plain DNS name")
    paths = ((rules[0].get("http") or {}).get("paths")) or []
    if len(paths) != 1 or paths[0].get("path") != "/":
        raise Refused("one path, /, is expected")
    service = str(((paths[0].get("backend") or {}).get("service") or {}).get("name") or "")
    auth_url = str(notes.get(AUTH_URL) or "")
    if not _URL.match(auth_url) or not _port_ok(auth_url):
        # An unguarded session page is never served.
        raise Refused(f"the auth-url {auth_url[:120]!r} is missing or not a plain http(s) URL")
    headers = tuple(h.strip() for h in str(notes.get(AUTH_RESPONSE_HEADERS) or "").split(","))
    headers = tuple(h for h in headers if h)
    if not all(_HEADER.match(h) for h in headers):
        raise Refused("auth-response-headers must be header names")
    size = str(notes.get(BODY_SIZE) or DEFAULT_BODY_SIZE)
    if not _SIZE.match(size):
        raise Refused(f"proxy-body-size {size[:20]!r} is not a size")
    timeout = str(notes.get(READ_TIMEOUT) or DEFAULT_READ_TIMEOUT)
    if not timeout.isdigit() or not 1 <= int(timeout) <= 86400:
        raise Refused(f"proxy-read-timeout {timeout[:20]!r} is not a number of seconds")
    always = str(notes.get(ALWAYS_SET_COOKIE) or "false").lower() == "true"
    method = notes.get(AUTH_METHOD)
    if method is not None and method not in _METHODS:
        raise Refused(f"auth-method {str(method)[:20]!r} is not an HTTP method")
    signin = notes.get(AUTH_SIGNIN)
    if signin is not None and (not _URL.match(str(signin)) or not _port_ok(str(signin))):
        raise Refused(f"the auth-signin {str(signin)[:120]!r} is not a plain http(s) URL")
    param = str(notes.get(AUTH_SIGNIN_PARAM) or "rd")
    if not _PARAM.match(param):
        raise Refused(f"auth-signin-redirect-param {param[:40]!r} is not a parameter name")
    return Route(
        host,
        auth_url,
        headers,
        size,
        int(timeout),
        always,
        method,
        str(signin) if signin is not None else None,
        param,
        service,
    )


def _port_ok(url: str) -> bool:
    try:
        port = urlsplit(url).port
    except ValueError:
        return False
    return port is None or 1 <= port <= 65535


def upstream(address: str, port: int) -> str | None:
    """`address:port` when it is an IPv4 address and a port nginx can be given, else None."""
    found = f"{address}:{port}"
    return found if _UPSTREAM.match(found) and 1 <= port <= 65535 else None


def routes(
    ingresses: Iterable[Json], upstreams: Mapping[str, str]
) -> tuple[list[Route], list[str]]:
    """Every servable route, sorted by host, with the address of the program behind its
    service (from `upstreams`, service name to `host:port`, each made by `upstream`); and a
    line for each Ingress refused."""
    found: dict[str, Route] = {}
    refused: list[str] = []
    for ingress in ingresses:
        name = str((ingress.get("metadata") or {}).get("name") or "?")
        try:
            route = route_of(ingress)
        except Refused as exc:
            refused.append(f"{name}: {exc}")
            continue
        if route.host in found:
            refused.append(f"{name}: the host {route.host} is served by another Ingress")
            continue
        found[route.host] = Route(**{**route.__dict__, "upstream": upstreams.get(route.service)})
    return [found[h] for h in sorted(found)], refused


@dataclass(frozen=True)
class Layout:
    """Where nginx listens and keeps its files (all under one folder of the demo's data dir)."""

    folder: Path
    port: int
    run_as: str | None = None  # the worker processes' user when nginx starts as root
    temp_folder: Path | None = None  # for request bodies and responses; `folder`/temp if None

    @property
    def config(self) -> Path:
        return self.folder / "nginx.conf"

    @property
    def temp(self) -> Path:
        return self.temp_folder or self.folder / "temp"


_AUTH_LOCATION = "/_external-auth"
# What a user who opens a session before its program listens sees (after the access check):
# a page that reloads itself until the program answers.
_PAGE = (
    "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=2>"
    '<title>GShare session</title><p style="font:16px system-ui;margin:4em auto;max-width:36em">'
)
_UNAVAILABLE = (
    f"{_PAGE}This session is not running here yet. If it is starting, this page reloads by itself."
)
# A host no Ingress names (yet: a resumed session's Ingress may be a moment behind its pod).
_UNKNOWN = (
    f"{_PAGE}No session is served at this address now. If you have just started or resumed "
    "it, this page reloads by itself until it is."
)


def config(layout: Layout, served: Iterable[Route]) -> str:
    """The whole nginx.conf: a default server that knows no host, and one server per route."""
    folder, port = layout.folder, layout.port
    head = [
        "# Written by the GShare demo from the cluster's Ingress objects; rewritten on change.",
        "worker_processes 1;",
        f"pid {folder / 'nginx.pid'};",
        f"error_log {folder / 'error.log'} warn;",
    ]
    if layout.run_as:
        head.append(f"user {layout.run_as};")
    temp = layout.temp
    http = [
        "events { worker_connections 1024; }",
        "http {",
        "    server_tokens off;",
        "    server_names_hash_bucket_size 128;",
        # No query strings: an entry link's ticket is in one.
        "    log_format gshare '$remote_addr [$time_local] \"$request_method $host $uri\" '",
        "                      '$status $body_bytes_sent $request_time';",
        f"    access_log {folder / 'access.log'} gshare;",
        f"    client_body_temp_path {temp / 'body'};",
        f"    proxy_temp_path {temp / 'proxy'};",
        f"    fastcgi_temp_path {temp / 'fastcgi'};",
        f"    uwsgi_temp_path {temp / 'uwsgi'};",
        f"    scgi_temp_path {temp / 'scgi'};",
        "    map $http_upgrade $connection_upgrade { default upgrade; '' close; }",
        "    server {",
        f"        listen 127.0.0.1:{port} default_server;",
        "        server_name _;",
        "        default_type text/html;",
        "        add_header Cache-Control no-store always;",
        f"        return 404 '{_UNKNOWN}';",
        "    }",
    ]
    servers = [_server(route, port) for route in served]
    return "\n".join([*head, *http, *servers, "}", ""])


def _server(route: Route, port: int) -> str:
    auth = urlsplit(route.auth_url)
    passed = "\n".join(
        f"            auth_request_set $auth_response_{i} $upstream_http_{_var(h)};\n"
        f"            proxy_set_header {h} $auth_response_{i};"
        for i, h in enumerate(route.response_headers)
    )
    if route.upstream is not None:
        target = f"proxy_pass http://{route.upstream};"
    else:
        # No program yet: 503 after the access check, like ingress-nginx's answer for a service
        # without ready endpoints. (`return` would answer before the check runs; try_files over
        # an empty root answers in the content phase, after it.)
        target = "root /nonexistent;\n            try_files /.gshare @unavailable;"
    always = " always" if route.always_set_cookie else ""
    method = f"\n            proxy_method {route.auth_method};" if route.auth_method else ""
    signin, to_signin = "", ""
    if route.signin_url:
        # As ingress-nginx's sign-in location: the check's cookie goes out with the redirect.
        signin = f"""
        location @signin {{
            internal;
            add_header Set-Cookie $auth_cookie;
            add_header Cache-Control no-store always;
            return 302 {route.signin_url}?{route.signin_param}=$scheme://$http_host$request_uri;
        }}
"""
        to_signin = "\n            error_page 401 = @signin;"
    return f"""    server {{
        listen 127.0.0.1:{port};
        server_name {route.host};
        client_max_body_size {route.body_size};

        location = {_AUTH_LOCATION} {{
            internal;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Forwarded-Proto "";
            proxy_set_header X-Request-ID $request_id;
            proxy_set_header Host {auth.netloc};
            proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Sent-From "nginx-ingress-controller";
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Auth-Request-Redirect $request_uri;
            proxy_http_version 1.1;{method}
            proxy_pass "{route.auth_url}";
        }}

        location @unavailable {{
            add_header Set-Cookie $auth_cookie{always};
            add_header Cache-Control no-store always;
            default_type text/html;
            return 503 '{_UNAVAILABLE}';
        }}
{signin}
        location / {{
            auth_request {_AUTH_LOCATION};
            auth_request_set $auth_cookie $upstream_http_set_cookie;
            add_header Set-Cookie $auth_cookie{always};{to_signin}
{passed}
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_read_timeout {route.read_timeout}s;
            error_page 502 504 = @unavailable;
            proxy_send_timeout {route.read_timeout}s;
            {target}
        }}
    }}
"""


def _var(header: str) -> str:
    """nginx's variable name for a response header: lower case, `-` as `_`."""
    return header.lower().replace("-", "_")
