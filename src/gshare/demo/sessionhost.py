"""The demo's stand-in for the kubelet, a storage provisioner and ingress-nginx: it follows the
simulated cluster's session claims, pods, Services and Ingress objects, makes a volume for
each claim that waits for one, runs a real program on the host for each pod the simulated nodes
report Running, and keeps nginx's configuration in step.

Pods on a real node (`gshare.devnode`) run for real: their page is served from the pod's own
address once the kubelet reports it ready, and their claims are left to the node's
provisioner.

A session's home folder is a directory under the demo's data dir named after the home volume's
claim, so it is kept across pause and resume (and across sessions that reuse the volume), like
the volume it stands in for. Pausing, stopping or deleting a session removes its pod, and the
program ends with it.
"""

from __future__ import annotations

import contextlib
import html
import http.server
import logging
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from gshare.demo import ingress, loopback
from gshare.demo.nginx import Nginx, listening, with_parent
from gshare.demo.programs import Program, program_for
from gshare.devcluster import Cluster, free_port
from gshare.operator import manifests

log = logging.getLogger("gshare.demo.sessions")
Json = dict[str, Any]
POLL_SECONDS = 1.0
STOP_GRACE_SECONDS = 10
# What each session type runs in the operator's pod, to tell the type from a pod.
TYPE_OF_COMMAND = {tuple(argv): kind for kind, argv in manifests.COMMANDS.items()}


@dataclass
class Running:
    """One pod's program on the host."""

    pod_uid: str
    session_id: str
    port: int
    process: subprocess.Popen[bytes] | None = None
    page: http.server.ThreadingHTTPServer | None = None
    labels: dict[str, str] = field(default_factory=dict)

    ready: bool = False

    def check_ready(self) -> None:
        """Like a readiness probe: the program listens. Only a ready program is behind its
        session's route; until then nginx answers a page that waits."""
        if not self.ready:
            self.ready = listening(self.port)

    def alive(self) -> bool:
        return self.page is not None or (self.process is not None and self.process.poll() is None)

    def stop(self) -> None:
        if self.page is not None:
            self.page.shutdown()
            self.page.server_close()
        if self.process is None or self.process.poll() is not None:
            return
        # The program and whatever it started (kernels, shells) form one process group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def home_claim(pod: Json) -> str | None:
    """The claim mounted at the session's HOME, if any."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or [{}]
    env = {e.get("name"): e.get("value") for e in containers[0].get("env") or []}
    home = env.get("HOME")
    mounted = {m.get("mountPath"): m.get("name") for m in containers[0].get("volumeMounts") or []}
    volume = mounted.get(home)
    for entry in spec.get("volumes") or []:
        if entry.get("name") == volume and entry.get("persistentVolumeClaim"):
            return str(entry["persistentVolumeClaim"].get("claimName") or "") or None
    return None


def ready(pod: Json) -> bool:
    """Whether the kubelet reports a pod Ready (its readiness probe passes) and it is not
    being deleted."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not (pod.get("metadata") or {}).get("deletionTimestamp") and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def session_type(pod: Json) -> str:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return TYPE_OF_COMMAND.get(tuple(containers[0].get("command") or ()), "unknown")


def runs(pod: Json) -> bool:
    """Whether a pod should have its program: Running on its node and not being deleted."""
    meta = pod.get("metadata") or {}
    return (pod.get("status") or {}).get("phase") == "Running" and not meta.get("deletionTimestamp")


class SessionHost:
    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        folder: Path,
        volumes: Path,
        nginx: Nginx,
        real_nodes: frozenset[str] = frozenset(),
    ) -> None:
        self.cluster = cluster
        self.real_nodes = real_nodes  # nodes whose kubelet runs the pods itself
        self.namespace = namespace
        self.folder = folder  # programs' logs
        self.volumes = volumes  # the home folders
        self.nginx = nginx
        self.running: dict[str, Running] = {}
        self._refused: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        # One line per poll of the cluster would bury the demo's own log.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.volumes.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.nginx.start(ingress.config(self.nginx.layout, []))
        self._thread = threading.Thread(target=self._loop, name="demo-sessions", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        for running in self.running.values():
            running.stop()
        self.running.clear()
        self.nginx.stop()

    def _loop(self) -> None:
        with self.cluster.client() as client:
            while not self._stop.is_set():
                try:
                    self.sync(client)
                except (httpx.HTTPError, OSError, RuntimeError) as exc:
                    log.warning("could not follow the session pods: %s", exc)
                self._stop.wait(POLL_SECONDS)

    def _list(self, client: httpx.Client, path: str) -> list[Json]:
        answer = client.get(path)
        answer.raise_for_status()
        return list(answer.json().get("items") or [])

    def sync(self, client: httpx.Client) -> None:
        """One pass: a volume for each claim that waits for one, programs for the pods that
        run, none for the others, nginx in step."""
        ns = self.namespace
        if not self.real_nodes and (made := self.cluster.provision_claims(client, ns)):
            log.info("made %d volumes for new claims", made)
        pods = self._list(
            client, f"/api/v1/namespaces/{ns}/pods?labelSelector={manifests.SESSION_LABEL}"
        )
        services = self._list(client, f"/api/v1/namespaces/{ns}/services")
        ingresses = self._list(client, f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses")
        real = [p for p in pods if (p.get("spec") or {}).get("nodeName") in self.real_nodes]
        simulated = [p for p in pods if p not in real]
        wanted = {p["metadata"]["uid"]: p for p in simulated if runs(p)}
        for uid in [u for u in self.running if u not in wanted]:
            gone = self.running.pop(uid)
            log.info("session %s: its pod is gone; ending its program", gone.session_id)
            gone.stop()
        for uid, pod in wanted.items():
            known = self.running.get(uid)
            if known is not None and known.alive():
                known.check_ready()
                continue
            if known is not None:
                log.warning("session %s: its program exited; starting it again", known.session_id)
                known.stop()
            self.running[uid] = self._start(pod)
            self.running[uid].check_ready()
        served, refused = ingress.routes(ingresses, self._upstreams(services, real))
        for line in set(refused) - self._refused:
            log.warning("not serving Ingress %s", line)
        self._refused = set(refused)
        self.nginx.apply(ingress.config(self.nginx.layout, served))

    def _upstreams(self, services: list[Json], real: list[Json]) -> dict[str, str]:
        """Each Service's name to the address of the program behind it (its selector's pod):
        a ready real pod's address and the Service's target port, or the loopback port of a
        simulated pod's program."""
        found: dict[str, str] = {}
        for service in services:
            spec = service.get("spec") or {}
            selector = spec.get("selector") or {}
            if not selector:
                continue
            name = service["metadata"]["name"]
            for pod in real:
                labels = (pod.get("metadata") or {}).get("labels") or {}
                address = (pod.get("status") or {}).get("podIP")
                ports = spec.get("ports") or [{}]
                target = ports[0].get("targetPort")
                if (
                    ready(pod)
                    and address
                    and isinstance(target, int)
                    and all(labels.get(k) == v for k, v in selector.items())
                    and (found_at := ingress.upstream(str(address), target))
                ):
                    found[name] = found_at
                    break
            for running in self.running.values():
                if name in found:
                    break
                if running.ready and all(running.labels.get(k) == v for k, v in selector.items()):
                    found[name] = f"127.0.0.1:{running.port}"
        return found

    def _start(self, pod: Json) -> Running:
        meta = pod["metadata"]
        labels = dict(meta.get("labels") or {})
        session_id = labels.get(manifests.SESSION_LABEL, meta["name"])
        claim = home_claim(pod) or f"session-{session_id}"
        home = self.volumes / claim
        home.mkdir(mode=0o700, exist_ok=True)
        port = free_port()
        kind = session_type(pod)
        try:
            program = program_for(kind, port, home)
        except LookupError as exc:
            program = Program(message=str(exc))
        running = Running(meta["uid"], session_id, port, labels=labels)
        if program.message:
            running.page = _serve_message(port, program.message)
            log.warning("session %s (%s): %s", session_id, kind, program.message)
            return running
        out = (self.folder / f"{session_id}.log").open("ab")
        running.process = subprocess.Popen(  # noqa: S603 - the session type's own program
            with_parent(list(program.argv)),
            cwd=home,
            env=program.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.info("session %s (%s): started on port %s in %s", session_id, kind, port, home)
        return running


def _serve_message(port: int, message: str) -> http.server.ThreadingHTTPServer:
    """A one-page server standing in for a program the demo cannot run."""
    body = (
        "<!doctype html><meta charset=utf-8><title>GShare demo</title>"
        f"<p style='font:16px system-ui;max-width:40em;margin:4em auto'>{html.escape(message)}</p>"
    ).encode()

    return loopback.serve(lambda: (200, body), "text/html; charset=utf-8", port)
