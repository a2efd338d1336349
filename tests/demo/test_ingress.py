"""The demo's nginx, configured from Ingress objects as ingress-nginx configures them: what the
access check is sent, what its answers do, and Ingress objects it refuses to serve.

nginx here is the real Debian nginx. On each side of it stands a small recorder: an access
check that answers as told, and a program that echoes what reached it. (The real access check
behind the real nginx is driven from Chromium in tests/e2e/test_demo_sessions.py.)
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gshare.demo import ingress
from gshare.demo.nginx import Nginx, binary, layout_for
from gshare.devcluster import free_port
from gshare.operator import manifests
from tests.eventually import eventually_sync

SESSION = "0b9d6f8e-7a41-4c1e-9a56-3e1f0c2d4b5a"
DOMAIN = "sessions.localhost"
HOST = f"{SESSION}.{DOMAIN}"
SIGNIN = "http://127.0.0.1:9/api/v1/session-entry"
GOOD_COOKIE = "__Host-access=good; Secure; HttpOnly; Path=/"


class Recorder(http.server.ThreadingHTTPServer):
    """Serves in a thread; `seen` keeps each request's path and headers."""

    def __init__(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.seen: list[tuple[str, dict[str, str]]] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Quiet(http.server.BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, *args: object) -> None:
        pass

    def _record(self) -> dict[str, str]:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append((self.path, headers))
        return headers


class Check(_Quiet):
    """An access check, as the API answers: a `ticket` in the original URL earns the cookie
    with a 401 (the browser is to leave the ticket behind), the cookie `good` passes, the cookie
    `renew` passes and earns a fresh one, the cookie `stranger` is forbidden, anything else is
    unauthenticated."""

    def do_GET(self) -> None:
        headers = self._record()
        cookie, original = headers.get("cookie", ""), headers.get("x-original-url", "")
        if "gshare_ticket=ok" in original:
            self.send_response(401)
            self.send_header("Set-Cookie", GOOD_COOKIE)
        elif "access=good" in cookie or "access=renew" in cookie:
            self.send_response(204)
            self.send_header("X-GShare-User", "ada@example.org")
            if "access=renew" in cookie:
                self.send_header("Set-Cookie", GOOD_COOKIE)
        else:
            self.send_response(403 if "access=stranger" in cookie else 401)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Program(_Quiet):
    """A session's program: echoes the headers it was sent, having read the whole body. (One
    that answers with a body still unread closes on it: the kernel then resets the connection,
    which can drop the answer before nginx reads it, and nginx says 502.)"""

    def do_GET(self) -> None:
        headers = self._record()
        self.rfile.read(int(headers.get("content-length") or 0))
        body = json.dumps(headers).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


def operator_ingress(auth_url: str, session_id: str = SESSION) -> dict:
    """The Ingress the operator creates for a session (its own builder, not a copy)."""
    spec = manifests.SessionSpec(
        session_id=session_id,
        owner_id="7",
        session_type="jupyterlab",
        image="jupyterlab:1",
        cpu_millicores=1000,
        memory_mib=1024,
    )
    config = manifests.OperatorConfig(sessions_domain=DOMAIN, auth_url=auth_url, signin_url=SIGNIN)
    return manifests.ingress(spec, config, manifests.owner_reference("x", "uid"))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Nginx, Recorder, Recorder]]:
    if binary() is None:
        pytest.fail("Debian's nginx is missing: `make test` installs it")
    check, program = Recorder(Check), Recorder(Program)
    layout = layout_for(tmp_path_factory.mktemp("ingress"), free_port())
    served, refused = ingress.routes(
        [operator_ingress(f"http://127.0.0.1:{check.port}/internal/v1/session-access")],
        {manifests.resource_name(SESSION): f"127.0.0.1:{program.port}"},
    )
    assert refused == []
    server = Nginx(layout)
    server.start(ingress.config(layout, served))
    yield server, check, program
    server.stop()
    check.shutdown()
    program.shutdown()


def _get(nginx: Nginx, path: str = "/", host: str = HOST, **kw: object) -> httpx.Response:
    """A request as a browser sends it to http://<host>:<port>/ (the host resolves to loopback)."""
    port = nginx.layout.port
    headers = {"Host": f"{host}:{port}", **kw}
    return httpx.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=10)  # type: ignore[arg-type]


def test_a_ticket_earns_the_cookie_and_the_check_hears_what_ingress_nginx_sends(
    stack: tuple[Nginx, Recorder, Recorder],
) -> None:
    nginx, check, program = stack
    before = len(program.seen)
    answer = _get(nginx, "/lab?x=1&gshare_ticket=ok")
    port = nginx.layout.port
    # On to the sign-in route with the cookie and the address asked for (left unescaped: see
    # demo.ingress), never to the program.
    assert answer.status_code == 302
    assert (
        answer.headers["location"] == f"{SIGNIN}?rd=http://{HOST}:{port}/lab?x=1&gshare_ticket=ok"
    )
    assert answer.headers["set-cookie"] == GOOD_COOKIE
    assert len(program.seen) == before
    path, sent = check.seen[-1]
    assert path == f"/internal/v1/session-access/{SESSION}"
    assert sent["x-original-url"] == f"http://{HOST}:{port}/lab?x=1&gshare_ticket=ok"
    assert sent["x-original-method"] == "GET"
    assert sent["x-auth-request-redirect"] == "/lab?x=1&gshare_ticket=ok"
    assert sent["x-sent-from"] == "nginx-ingress-controller"
    assert sent["host"] == f"127.0.0.1:{check.port}"
    # The program gets the user the check named, never the one the client claimed.
    back = _get(nginx, "/lab?x=1", Cookie="__Host-access=good", **{"X-GShare-User": "mallory"})
    assert back.status_code == 200
    _, reached = program.seen[-1]
    assert reached["x-gshare-user"] == "ada@example.org"
    assert reached["host"] == f"{HOST}:{port}"


def test_the_cookie_alone_gets_in_and_refusals_are_answered_as_the_check_says(
    stack: tuple[Nginx, Recorder, Recorder],
) -> None:
    nginx, _, program = stack
    before = len(program.seen)
    assert _get(nginx, Cookie="__Host-access=good").status_code == 200
    assert "set-cookie" not in _get(nginx, Cookie="__Host-access=good").headers
    refused = _get(nginx, "/tree?a=1")
    assert refused.status_code == 302  # to the sign-in route, which says why
    port = nginx.layout.port
    assert refused.headers["location"] == f"{SIGNIN}?rd=http://{HOST}:{port}/tree?a=1"
    assert _get(nginx, Cookie="__Host-access=stranger").status_code == 403
    assert _get(nginx, "/?gshare_ticket=forged").status_code == 302
    assert len(program.seen) == before + 2, "a refused request reached the session"


def test_a_request_body_never_reaches_the_check(stack: tuple[Nginx, Recorder, Recorder]) -> None:
    nginx, check, program = stack
    port = nginx.layout.port
    answer = httpx.post(
        f"http://127.0.0.1:{port}/api/contents",
        headers={"Host": f"{HOST}:{port}", "Cookie": "__Host-access=good"},
        content=b"x" * 100_000,
    )
    assert answer.status_code == 200
    assert check.seen[-1][1].get("content-length") in (None, "0")
    assert program.seen[-1][1]["content-length"] == "100000"


def test_the_access_log_keeps_no_ticket(stack: tuple[Nginx, Recorder, Recorder]) -> None:
    nginx, _, _ = stack
    assert _get(nginx, "/lab?gshare_ticket=ok").status_code == 302
    log = nginx.layout.folder / "access.log"
    # nginx writes its log as requests end
    eventually_sync(
        lambda: "/lab" in log.read_text(), "the request to be logged", timeout=10, interval=0.05
    )
    assert "gshare_ticket" not in log.read_text()


def test_an_unknown_host_is_not_served(stack: tuple[Nginx, Recorder, Recorder]) -> None:
    nginx, _, _ = stack
    answer = _get(nginx, host=f"{SESSION[:-1]}0.{DOMAIN}", Cookie="__Host-access=good")
    assert answer.status_code == 404


def test_a_reload_serves_new_routes_and_a_session_without_a_listening_program_answers_503(
    stack: tuple[Nginx, Recorder, Recorder],
) -> None:
    """After the access check, and with its cookie: a page that reloads itself until the
    program answers, whether the pod has no program yet or its program does not listen yet."""
    nginx, check, program = stack
    without, starting = (
        "5e0c8a7d-1f2b-4c3d-8e9f-0a1b2c3d4e5f",
        "6f1d9b8e-2a3c-4d4e-9f0a-1b2c3d4e5f60",
    )
    auth = f"http://127.0.0.1:{check.port}/internal/v1/session-access"
    served, _ = ingress.routes(
        [operator_ingress(auth), operator_ingress(auth, without), operator_ingress(auth, starting)],
        {
            manifests.resource_name(SESSION): f"127.0.0.1:{program.port}",
            manifests.resource_name(starting): f"127.0.0.1:{free_port()}",  # nothing listens there
        },
    )
    assert nginx.apply(ingress.config(nginx.layout, served)) is True
    nginx.wait_reloaded()  # an old worker would answer 404 from the previous configuration
    assert nginx.apply(ingress.config(nginx.layout, served)) is False
    for session in (without, starting):
        host = f"{session}.{DOMAIN}"
        assert _get(nginx, host=host).status_code == 302, "the 503 came before the access check"
        answer = _get(nginx, host=host, Cookie="__Host-access=renew")
        assert answer.status_code == 503
        assert "reloads by itself" in answer.text
        assert answer.headers["set-cookie"].startswith("__Host-access=good;")
        assert answer.headers["cache-control"] == "no-store"
    assert _get(nginx, Cookie="__Host-access=good").status_code == 200, "the first host is kept"


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (ingress.AUTH_URL, 'http://127.0.0.1:1/check"; return 200; #'),
        (ingress.AUTH_URL, "http://127.0.0.1:1/check;\nlocation /x { }"),
        (ingress.AUTH_URL, "http://127.0.0.1:1/${host}"),
        (ingress.AUTH_URL, "http://127.0.0.1:99999/check"),
        (ingress.AUTH_URL, ""),
        (ingress.AUTH_RESPONSE_HEADERS, "X-GShare-User; more_set_headers x"),
        (ingress.BODY_SIZE, "64m; allow all"),
        (ingress.READ_TIMEOUT, "0"),
        (ingress.AUTH_METHOD, "GET; deny all"),
        (ingress.READ_TIMEOUT, "10; deny all"),
        (ingress.AUTH_SIGNIN, "http://127.0.0.1:1/in?rd=$host"),
        (ingress.AUTH_SIGNIN, "http://127.0.0.1:1/in; return 200"),
        (ingress.AUTH_SIGNIN_PARAM, "rd; deny all"),
    ],
)
def test_an_ingress_whose_annotations_would_change_the_configuration_is_refused(
    annotation: str, value: str
) -> None:
    hostile = operator_ingress("http://127.0.0.1:1/internal/v1/session-access")
    hostile["metadata"]["annotations"][annotation] = value
    served, refused = ingress.routes([hostile], {})
    assert served == []
    assert len(refused) == 1


@pytest.mark.parametrize(
    "host", ["a b.localhost", "x.localhost;", "", "X.localhost\n", "a.localhost:80", "*.localhost"]
)
def test_an_ingress_with_an_odd_host_is_refused(host: str) -> None:
    hostile = operator_ingress("http://127.0.0.1:1/check")
    hostile["spec"]["rules"][0]["host"] = host
    assert ingress.routes([hostile], {})[0] == []


def test_two_ingresses_for_one_host_serve_only_the_first() -> None:
    one = operator_ingress("http://127.0.0.1:1/check")
    two = operator_ingress("http://127.0.0.1:2/check")
    two["metadata"]["name"] = "another"
    served, refused = ingress.routes([one, two], {})
    assert [r.auth_url for r in served] == [f"http://127.0.0.1:1/check/{SESSION}"]
    assert refused == [f"another: the host {HOST} is served by another Ingress"]


def test_the_configuration_keeps_to_loopback(tmp_path: Path) -> None:
    layout = ingress.Layout(tmp_path, 8123)
    served, _ = ingress.routes([operator_ingress("http://127.0.0.1:1/check")], {})
    listens = [
        line.strip() for line in ingress.config(layout, served).splitlines() if "listen" in line
    ]
    assert listens
    assert all(line.startswith("listen 127.0.0.1:8123") for line in listens)


@pytest.mark.parametrize(
    ("address", "port", "wanted"),
    [
        ("10.250.0.7", 8080, "10.250.0.7:8080"),
        ("127.0.0.1", 1, "127.0.0.1:1"),
        ("10.250.0.7; deny all", 8080, None),
        ("10.250.0.7:1", 8080, None),
        ("256.0.0.1", 8080, None),
        ("fd00::1", 8080, None),
        ("", 8080, None),
        ("10.250.0.7", 0, None),
        ("10.250.0.7", 65536, None),
    ],
)
def test_only_an_address_and_a_port_reach_proxy_pass(
    address: str, port: int, wanted: str | None
) -> None:
    """A pod's address is read from the cluster: anything but IPv4 and a port is not served."""
    assert ingress.upstream(address, port) == wanted
