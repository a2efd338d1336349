"""What the real-GPU suites share: their configuration, the API client, sessions and their pods.

The suites run against a running GShare whose cluster has real cards under HAMi. They are not
part of `make test`; with no cluster configured each prints a skip line and exits 0.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NoReturn

import httpx

ENV = "GSHARE_GPU_E2E_"
REQUIRED = ("URL", "EMAIL", "PASSWORD", "GROUP_ID")
POLL_SECONDS = 2.0
# A session that ends up here will not reach any other state without being asked.
SETTLED = frozenset({"stopped", "failed", "lost"})
LIVE = frozenset({"queued", "starting", "running", "pausing", "resuming", "stopping"})
MICRO = Decimal("0.000001")

Json = dict[str, Any]


def _env(name: str, default: str = "") -> str:
    return os.environ.get(ENV + name, "").strip() or default


@dataclass(frozen=True)
class Config:
    url: str
    email: str
    password: str
    group_id: str
    kubeconfig: str
    namespace: str
    exclusive_tier: str
    quarter_tier: str
    model: str
    session_type: str
    image_id: str
    memory_mib: int | None
    admin_email: str
    admin_password: str
    start_timeout_s: float
    run_seconds: float
    max_sessions: int
    idle_timeout_minutes: int
    idle_warning_minutes: float
    observe_seconds: float

    @classmethod
    def from_env(cls) -> Config:
        memory = _env("MEMORY_MIB")
        return cls(
            url=_env("URL").rstrip("/"),
            email=_env("EMAIL"),
            password=os.environ.get(ENV + "PASSWORD", ""),
            group_id=_env("GROUP_ID"),
            kubeconfig=_env("KUBECONFIG"),
            namespace=_env("NAMESPACE", "gshare-sessions"),
            exclusive_tier=_env("EXCLUSIVE_TIER", "exclusive"),
            quarter_tier=_env("QUARTER_TIER", "1/4"),
            model=_env("MODEL"),
            # The suites run Python in the session's pod: JupyterLab images have it.
            session_type=_env("SESSION_TYPE", "jupyterlab"),
            image_id=_env("IMAGE_ID"),
            memory_mib=int(memory) if memory else None,
            admin_email=_env("ADMIN_EMAIL"),
            admin_password=os.environ.get(ENV + "ADMIN_PASSWORD", ""),
            # Pulling a CUDA image onto a fresh node takes minutes.
            start_timeout_s=float(_env("START_TIMEOUT_S", "900")),
            run_seconds=float(_env("RUN_SECONDS", "60")),
            max_sessions=int(_env("MAX_SESSIONS", "16")),
            idle_timeout_minutes=int(_env("IDLE_TIMEOUT_MINUTES", "1")),
            # The server's GSHARE_IDLE_WARNING_MINUTES: the warning comes first, then the pause.
            idle_warning_minutes=float(_env("IDLE_WARNING_MINUTES", "10")),
            # Past the default metering interval (60 s), so a missed stop of billing would show.
            observe_seconds=float(_env("OBSERVE_SECONDS", "90")),
        )

    def missing(self, *, needs_kubectl: bool) -> list[str]:
        names = [ENV + n for n in REQUIRED if not _env(n)]
        if needs_kubectl and not self.kubeconfig:
            names.append(ENV + "KUBECONFIG")
        return names


class Failed(Exception):
    """A check failed; the suite stops there and cleans up."""


class ApiError(Exception):
    def __init__(self, method: str, path: str, response: httpx.Response) -> None:
        self.status = response.status_code
        self.body = response.text[:2000]
        super().__init__(f"{method} {path} answered {self.status}: {self.body}")


class Api:
    """A signed-in API client: the login's CSRF token goes with every change."""

    def __init__(self, base_url: str, email: str, password: str) -> None:
        self.client = httpx.Client(base_url=base_url, timeout=30)
        login = self.client.post("/api/v1/auth/login", json={"email": email, "password": password})
        if login.status_code != 200:
            raise Failed(
                f"sign_in: {email} could not sign in ({login.status_code}): {login.text[:500]}"
            )
        body = login.json()
        if body["must_change_password"]:
            raise Failed(
                f"sign_in: {email} must change their password before the suites can use it"
            )
        self.client.headers["X-CSRF-Token"] = body["csrf_token"]
        self.user_id: str = body["user"]["id"]

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.client.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise ApiError(method, path, response)
        return response.json() if response.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Json | None = None) -> Any:
        return self.call("POST", path, json=body)

    def put(self, path: str, body: Json) -> Any:
        return self.call("PUT", path, json=body)

    def delete(self, path: str, **params: Any) -> Any:
        return self.call("DELETE", path, params=params)

    def close(self) -> None:
        self.client.close()


def amount(text: str) -> Decimal:
    return Decimal(text)


def charge_for(price_per_hour: Decimal, seconds: int) -> Decimal:
    """What GShare bills for holding a card `seconds` whole seconds (metering.py), in credits."""
    micro_price = int(price_per_hour / MICRO)
    return Decimal(micro_price * seconds // 3600) * MICRO


@dataclass
class Suite:
    """One suite's run: its checks, the sessions it started and what it must undo."""

    name: str
    config: Config
    passed: int = 0
    sessions: list[str] = field(default_factory=list)
    undo: list[tuple[str, Callable[[], None]]] = field(default_factory=list)
    _api: Api | None = None

    # ---- reporting --------------------------------------------------------------------------

    def check(self, name: str, ok: bool, what: str, why: str | None = None) -> None:
        """Print the check's line; a failed check ends the suite."""
        if ok:
            self.passed += 1
            print(f"PASS {name}: {what}", flush=True)
            return
        raise Failed(f"{name}: {why or what}")

    def fail(self, name: str, why: str) -> NoReturn:
        raise Failed(f"{name}: {why}")

    def note(self, text: str) -> None:
        print(f"  {text}", flush=True)

    # ---- the API ----------------------------------------------------------------------------

    @property
    def api(self) -> Api:
        if self._api is None:
            self._api = Api(self.config.url, self.config.email, self.config.password)
        return self._api

    def admin_api(self) -> Api | None:
        if not (self.config.admin_email and self.config.admin_password):
            return None
        admin = Api(self.config.url, self.config.admin_email, self.config.admin_password)
        self.undo.append(("close the admin client", admin.close))
        return admin

    def tier(self, name: str) -> Json:
        """The group's tier of that name (of `GSHARE_GPU_E2E_MODEL` when several models have
        one)."""
        tiers = [
            t
            for t in self.api.get("/api/v1/tiers", group_id=self.config.group_id)["items"]
            if t["name"] == name
            and t["retired_at"] is None
            and (not self.config.model or t["model"] == self.config.model)
        ]
        if not tiers:
            self.fail("tier", f"the group offers no tier {name!r}" + self._of_model())
        if len(tiers) > 1:
            models = ", ".join(sorted(t["model"] for t in tiers))
            self.note(f"tier {name!r} exists for {models}; using {tiers[0]['model']}")
        return dict(tiers[0])

    def _of_model(self) -> str:
        return f" of model {self.config.model!r}" if self.config.model else ""

    def image(self) -> Json:
        kind = self.config.session_type
        images = [
            i
            for i in self.api.get("/api/v1/catalog")["items"]
            if i["session_type"] == kind
            and (not self.config.image_id or i["id"] == self.config.image_id)
        ]
        if not images:
            self.fail("image", f"the catalog has no enabled {kind} image")
        return dict(images[0])

    # ---- sessions ---------------------------------------------------------------------------

    def create_session(self, tier: Json, label: str) -> Json:
        body: Json = {
            "name": f"gpu-e2e {self.name} {label}",
            "session_type": self.config.session_type,
            "image_id": self.image()["id"],
            "group_id": self.config.group_id,
            "tier_id": tier["id"],
        }
        if self.config.memory_mib:
            body["memory_mib"] = self.config.memory_mib
        created: Json = self.api.post("/api/v1/sessions", body)
        self.sessions.append(created["id"])
        self.note(f"created session {created['id']} ({label}): {created['state']}")
        return created

    def session(self, session_id: str) -> Json:
        return dict(self.api.get(f"/api/v1/sessions/{session_id}"))

    def wait_state(
        self, session_id: str, wanted: Iterable[str], timeout_s: float | None = None
    ) -> Json:
        """Poll the session until it is in one of `wanted`; a session that settles anywhere
        else, or takes longer than the deadline, fails the suite."""
        wanted = frozenset(wanted)
        deadline = time.monotonic() + (timeout_s or self.config.start_timeout_s)
        while True:
            found = self.session(session_id)
            if found["state"] in wanted:
                return found
            if found["state"] in SETTLED:
                self.fail(
                    "state",
                    f"session {session_id} became {found['state']} instead of "
                    f"{'/'.join(sorted(wanted))}: {found['state_reason']}",
                )
            if time.monotonic() > deadline:
                self.fail(
                    "state",
                    f"session {session_id} is still {found['state']} "
                    f"({found['state_reason']}), not {'/'.join(sorted(wanted))}",
                )
            time.sleep(POLL_SECONDS)

    def ask_to_stop(self, session_id: str) -> None:
        try:
            self.api.post(f"/api/v1/sessions/{session_id}/stop")
        except ApiError as exc:
            if exc.status != 409:  # already stopping or stopped
                raise

    def stop_session(self, session_id: str, timeout_s: float = 300) -> Json:
        self.ask_to_stop(session_id)
        return self.wait_state(session_id, {"stopped"}, timeout_s)

    def stop_sessions(self, session_ids: Iterable[str], timeout_s: float = 300) -> list[Json]:
        """Ask every one to stop first, so their pods go away together."""
        session_ids = list(session_ids)
        for session_id in session_ids:
            self.ask_to_stop(session_id)
        return [self.wait_state(s, {"stopped"}, timeout_s) for s in session_ids]

    def capture_entries(self, session_id: str, since: str) -> list[Json]:
        """Captures from the signed-in user's own wallet (where sessions are billed) for the
        session."""
        wallet = self.api.get("/api/v1/wallets/me")["id"]
        entries: list[Json] = []
        cursor = None
        while True:
            page = self.api.get(
                f"/api/v1/wallets/{wallet}/entries",
                kind="capture",
                since=since,
                limit=200,
                cursor=cursor,
            )
            entries += [e for e in page["items"] if e["session_id"] == session_id]
            cursor = page["next_cursor"]
            if not cursor:
                return entries

    def cleanup(self) -> bool:
        """Stop and remove every session the suite started (with its home volume), then undo
        its settings. Whether everything it started is gone."""
        clean = True
        for session_id in self.sessions:
            try:
                self.ask_to_stop(session_id)
            except (ApiError, httpx.HTTPError) as exc:
                print(f"FAIL cleanup: session {session_id} could not be stopped: {exc}", flush=True)
        for session_id in self.sessions:
            try:
                self.wait_state(session_id, {"stopped"}, 300)
                self.api.delete(f"/api/v1/sessions/{session_id}", delete_home="true")
            except (Failed, ApiError, httpx.HTTPError) as exc:
                clean = False
                print(f"FAIL cleanup: session {session_id} did not stop: {exc}", flush=True)
        for what, step in reversed(self.undo):
            try:
                step()
            except (Failed, ApiError, httpx.HTTPError) as exc:
                clean = False
                print(f"FAIL cleanup: could not {what}: {exc}", flush=True)
        if self._api is not None:
            self._api.close()
        return clean

    # ---- the cluster ------------------------------------------------------------------------

    def kubectl(
        self, *args: str, stdin: str | None = None, timeout_s: float = 120
    ) -> subprocess.CompletedProcess[str]:
        # Arguments are built here from the suite's own values, never from a shell string.
        return subprocess.run(  # noqa: S603
            self._kubectl_argv(*args),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def _kubectl_argv(self, *args: str) -> list[str]:
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            self.fail("kubectl", "kubectl is not on PATH")
        base = [kubectl, "--namespace", self.config.namespace]
        if self.config.kubeconfig:
            base += ["--kubeconfig", self.config.kubeconfig]
        return [*base, *args]

    def pod(self, session_id: str) -> Json | None:
        """The session's pod (`session-<id>`), or None when there is none."""
        found = self.kubectl("get", "pod", pod_name(session_id), "--output", "json")
        if found.returncode != 0:
            if "NotFound" in found.stderr:
                return None
            self.fail("pod", f"kubectl get pod {pod_name(session_id)}: {found.stderr.strip()}")
        return dict(json.loads(found.stdout))

    def pod_gone(self, session_id: str, timeout_s: float = 180) -> bool:
        """Whether the session's pod is gone within the deadline (it terminates gracefully)."""
        deadline = time.monotonic() + timeout_s
        while self.pod(session_id) is not None:
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    def exec_in_pod(
        self, session_id: str, *command: str, stdin: str | None = None, timeout_s: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return self.kubectl(
            "exec",
            "--stdin",
            pod_name(session_id),
            "--container",
            "session",
            "--",
            *command,
            stdin=stdin,
            timeout_s=timeout_s,
        )

    def write_in_pod(self, session_id: str, path: str, text: str) -> None:
        """Put a file into the pod (with its own Python: the image need not have a shell)."""
        copy = "import sys; open(sys.argv[1], 'w').write(sys.stdin.read())"
        done = self.exec_in_pod(session_id, "python3", "-c", copy, path, stdin=text, timeout_s=60)
        if done.returncode != 0:
            self.fail("copy", f"could not write {path} in {pod_name(session_id)}: {done.stderr}")

    def start_in_pod(self, session_id: str, *command: str) -> PodProcess:
        return PodProcess(
            self._kubectl_argv(
                "exec", "--stdin", pod_name(session_id), "--container", "session", "--", *command
            )
        )


def pod_name(session_id: str) -> str:
    return f"session-{session_id}"


class PodProcess:
    """A process kept running in a pod, talked to line by line over `kubectl exec`."""

    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(  # noqa: S603 - argv built by Suite._kubectl_argv
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text)
        self.process.stdin.close()

    def wait_for(self, prefix: str, timeout_s: float) -> str | None:
        """The first line starting with `prefix`, or None if the process ended or the deadline
        passed first."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            self.output.append(line)
            if line.startswith(prefix):
                return line[len(prefix) :]
        return None

    def finish(self, timeout_s: float = 60) -> int | None:
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None

    def tail(self) -> str:
        return "\n".join(self.output[-20:])


def run_suite(name: str, body: Callable[[Suite], None], *, needs_kubectl: bool) -> NoReturn:
    """Run one suite and exit: 0 when it passed or is not configured, 1 when it failed."""
    config = Config.from_env()
    missing = config.missing(needs_kubectl=needs_kubectl)
    if missing:
        print(f"skipped: no GPU cluster configured ({name} needs {', '.join(missing)})")
        sys.exit(0)
    suite = Suite(name, config)
    failure = None
    try:
        body(suite)
    except Failed as exc:
        failure = str(exc)
    except KeyboardInterrupt:
        failure = "run: interrupted"
    except Exception as exc:  # whatever broke, the sessions it started are stopped below
        traceback.print_exc()
        failure = f"run: {type(exc).__name__}: {exc}"
    if failure is not None:
        print(f"FAIL {failure}", flush=True)
    clean = suite.cleanup()
    if failure is None and clean:
        print(f"PASS {name}: {suite.passed} checks passed", flush=True)
        sys.exit(0)
    why = f"failed after {suite.passed} passing checks" if failure else "it left sessions behind"
    print(f"FAIL {name}: {why}", flush=True)
    sys.exit(1)
