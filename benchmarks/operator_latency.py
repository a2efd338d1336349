"""Operator latency: 200 GShareSession resources created at once, time until each one's Pod,
Service and Ingress exist (p50, p99), against `kubectl apply` of the same rendered objects in the
same run on the same control plane. Goal: at most 2x the kubectl time (else it exits 1).

    .venv/bin/python benchmarks/operator_latency.py [--sessions 200] [--quick]

--quick runs the same path with a handful of sessions and checks no goal (make bench-smoke).

(Not benchmarks/operator.py: run as a script, that name would hide Python's own operator module.)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from gshare.devcluster import Cluster, testenv_bin
from gshare.operator.manifests import (
    GpuAssignment,
    OperatorConfig,
    SessionSpec,
    children,
    name_of,
    owner_reference,
)

KINDS = {
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Ingress": "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
}


def specs(count: int) -> list[SessionSpec]:
    return [
        SessionSpec(
            session_id=str(uuid.uuid4()),
            owner_id=str(uuid.uuid4()),
            session_type="terminal",
            image="registry.example/gshare/terminal:1",
            cpu_millicores=500,
            memory_mib=1024,
            gpu=GpuAssignment(node="gpu-0", card_uuid="GPU-x", vram_mib=4096, cores_percent=10),
        )
        for _ in range(count)
    ]


def resource(spec: SessionSpec) -> dict:
    return {
        "apiVersion": "gshare.io/v1alpha1",
        "kind": "GShareSession",
        "metadata": {"name": name_of(spec)},
        "spec": {
            "sessionId": spec.session_id,
            "ownerId": spec.owner_id,
            "sessionType": spec.session_type,
            "image": spec.image,
            "cpuMillicores": spec.cpu_millicores,
            "memoryMiB": spec.memory_mib,
            "desiredState": "Running",
            "gpu": {"node": "gpu-0", "cardUUID": "GPU-x", "vramMiB": 4096, "coresPercent": 10},
        },
    }


def watch_until_complete(
    cluster: Cluster, namespace: str, names: set[str], started: dict[str, float]
) -> list[float]:
    """Seconds from each session's start until its Pod, Service and Ingress all exist."""
    seen: dict[str, set[str]] = {n: set() for n in names}
    done: dict[str, float] = {}
    deadline = time.monotonic() + 600
    with cluster.client() as client:
        while len(done) < len(names) and time.monotonic() < deadline:
            for kind, path in KINDS.items():
                items = client.get(path.format(ns=namespace)).json()["items"]
                for item in items:
                    name = item["metadata"]["name"]
                    if name in seen:
                        seen[name].add(kind)
            now = time.monotonic()
            for name, kinds in seen.items():
                if name not in done and len(kinds) == len(KINDS):
                    done[name] = now
            time.sleep(0.05)
    if len(done) < len(names):
        raise SystemExit(f"only {len(done)} of {len(names)} sessions completed in {namespace}")
    return [done[n] - started[n] for n in names]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    if opts.quick:
        opts.sessions = 5
    folder = Path(tempfile.mkdtemp(prefix="gshare-bench-op-"))
    cluster = Cluster("bench", folder / "c", testenv_bin()).start()
    operator = None
    try:
        cluster.install_crd()
        for ns in ("bench-operator", "bench-kubectl"):
            cluster.create_namespace(ns)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GSHARE_")}
        env |= {
            "KUBECONFIG": str(cluster.kubeconfig),
            "GSHARE_OPERATOR_NAMESPACE": "bench-operator",
        }
        operator = subprocess.Popen(
            [sys.executable, "-m", "gshare", "operator"],
            env=env,
            stdout=(folder / "operator.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        # The operator is watching once it has built a first session's children; that session
        # is not counted.
        warm_up = specs(1)[0]
        with cluster.client() as client:
            path = "/apis/gshare.io/v1alpha1/namespaces/bench-operator/gsharesessions"
            client.post(path, json=resource(warm_up)).raise_for_status()
        watch_until_complete(
            cluster, "bench-operator", {name_of(warm_up)}, {name_of(warm_up): time.monotonic()}
        )

        # kubectl: apply the same rendered children (no owner: there is no resource here).
        kubectl_specs = specs(opts.sessions)
        config = OperatorConfig(namespace="bench-kubectl")
        documents = []
        for spec in kubectl_specs:
            for obj in children(spec, config, owner_reference("x", "y")):
                if obj["kind"] in KINDS:
                    obj["metadata"].pop("ownerReferences", None)
                    documents.append(obj)
        manifest = folder / "rendered.json"
        manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}))
        names = {name_of(s) for s in kubectl_specs}
        start = time.monotonic()
        started = dict.fromkeys(names, start)
        applying = threading.Thread(
            target=subprocess.run,
            kwargs={
                "args": [
                    str(cluster.bin / "kubectl"),
                    "--kubeconfig",
                    str(cluster.kubeconfig),
                    "apply",
                    "--server-side",
                    "-f",
                    str(manifest),
                ],
                "check": True,
                "capture_output": True,
            },
        )
        applying.start()
        kubectl = watch_until_complete(cluster, "bench-kubectl", names, started)
        applying.join()
        kubectl_total = max(kubectl)

        # The operator: create every resource at once, from 16 threads.
        operator_specs = specs(opts.sessions)
        names = {name_of(s) for s in operator_specs}
        started = {}
        path = "/apis/gshare.io/v1alpha1/namespaces/bench-operator/gsharesessions"

        def create(spec: SessionSpec) -> None:
            with cluster.client() as client:
                started[name_of(spec)] = time.monotonic()
                client.post(path, json=resource(spec)).raise_for_status()

        start = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            pool.map(create, operator_specs)
            ours = watch_until_complete(cluster, "bench-operator", names, started)
        operator_total = time.monotonic() - start

        print(f"{opts.sessions} sessions, Pod + Service + Ingress each:")
        print(
            f"  kubectl apply:  p50 {statistics.median(kubectl):6.2f}s  "
            f"p99 {percentile(kubectl, 0.99):6.2f}s  all done {kubectl_total:6.2f}s"
        )
        print(
            f"  operator:       p50 {statistics.median(ours):6.2f}s  "
            f"p99 {percentile(ours, 0.99):6.2f}s  all done {operator_total:6.2f}s"
        )
        print(
            f"ratio operator/kubectl, all done: {operator_total / kubectl_total:.2f} "
            f"(goal <= 2); p99: {percentile(ours, 0.99) / percentile(kubectl, 0.99):.2f}"
        )
        check_goal(
            operator_total <= 2 * kubectl_total,
            "operator at most 2x kubectl, all done",
            quick=opts.quick,
        )
    finally:
        if operator is not None:
            operator.send_signal(signal.SIGTERM)
            operator.wait(30)
        cluster.stop()


if __name__ == "__main__":
    main()
