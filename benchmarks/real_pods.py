"""Sessions as real pods: from a GShareSession resource to its JupyterLab answering on the pod's
address, on a real node (gshare.devnode: kubelet, containerd, runc, a local-path home volume),
against kwok's simulated start of the same resource on a simulated node of the same cluster, in
the same run (p50, p95, ratio; neither with a volume, since a simulated node cannot bind one);
the same real start with a new home volume; a pause and resume to the page answering again; the
memory of an idle JupyterLab pod, from the kubelet's summary. Goal: every real start with a home
volume answers within two minutes on this 2-core machine (else it exits 1).

    .venv/bin/python benchmarks/real_pods.py [--sessions 20] [--quick]

Needs root, the packages `hack/node.sh` installs and the images `make images` builds; without
them it says why and exits 0 (a quick run) or 2. --quick starts one of each and checks no goal.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from gshare import devnode
from gshare.demo.stack import local_image, podman_env, real_node_refused
from gshare.devcluster import Cluster, GpuNode, testenv_bin
from gshare.operator.inventory import Card

NAMESPACE = "bench-pods"
SESSIONS = f"/apis/gshare.io/v1alpha1/namespaces/{NAMESPACE}/gsharesessions"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
A100 = "NVIDIA-A100-SXM4-80GB"
REAL_CARD, SIMULATED_CARD = "GPU-bench-real-a100", "GPU-bench-sim-a100"
IMAGE = "ghcr.io/gshare/session-jupyterlab:1"


def resource(session_id: str, node: str, card: str, *, home: bool = True) -> dict:
    made = {
        "apiVersion": "gshare.io/v1alpha1",
        "kind": "GShareSession",
        "metadata": {"name": f"session-{session_id}"},
        "spec": {
            "sessionId": session_id,
            "ownerId": str(uuid.uuid4()),
            "sessionType": "jupyterlab",
            "image": IMAGE,
            "cpuMillicores": 250,
            "memoryMiB": 1024,
            "desiredState": "Running",
            "gpu": {"node": node, "cardUUID": card, "vramMiB": 10240, "coresPercent": 12},
            "volumes": [
                {"name": "home", "kind": "home", "mountPath": "/home/gshare", "sizeGiB": 1}
            ],
        },
    }
    if not home:
        del made["spec"]["volumes"]
    return made


def pod_of(client: httpx.Client, session_id: str) -> dict | None:
    found = client.get(f"{PODS}/session-{session_id}")
    return found.json() if found.status_code == 200 else None


def ready(pod: dict | None) -> bool:
    conditions = ((pod or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def wait(what: str, check, deadline_s: float = 300):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise SystemExit(f"{what} did not happen within {deadline_s:.0f} s")


def page_answers(client: httpx.Client, session_id: str) -> bool:
    """JupyterLab's own status page answers on the pod's address."""
    pod = pod_of(client, session_id)
    address = ((pod or {}).get("status") or {}).get("podIP")
    if not address:
        return False
    try:
        return httpx.get(f"http://{address}:8080/api/status", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def start(
    client: httpx.Client, node: str, card: str, real: bool, *, home: bool = False
) -> tuple[str, float]:
    """Seconds from the resource's creation to the page answering (real) or the pod reported
    Ready (simulated)."""
    session_id = str(uuid.uuid4())
    began = time.monotonic()
    made = resource(session_id, node, card, home=home)
    client.post(SESSIONS, json=made).raise_for_status()
    if real:
        wait("the page", lambda: page_answers(client, session_id))
    else:
        wait("the simulated pod", lambda: ready(pod_of(client, session_id)))
    return session_id, time.monotonic() - began


def remove(client: httpx.Client, session_id: str) -> None:
    client.delete(f"{SESSIONS}/session-{session_id}")
    wait("the pod to go", lambda: pod_of(client, session_id) is None)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def idle_memory(client: httpx.Client, session_id: str) -> int:
    """The pod's working set in bytes, read as the kubelet reads it: its memory cgroup's usage
    less its inactive file pages (cgroup v1 here)."""
    pod = pod_of(client, session_id)
    assert pod is not None
    uid = pod["metadata"]["uid"]
    (folder,) = Path("/sys/fs/cgroup/memory").glob(f"kubepods*/**/pod{uid}")
    usage = int((folder / "memory.usage_in_bytes").read_text())
    stats = dict(line.split() for line in (folder / "memory.stat").read_text().splitlines())
    return usage - int(stats.get("total_inactive_file", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    if opts.quick:
        opts.sessions = 1
    if reason := real_node_refused():
        print(f"real pods: not measured here: {reason}")
        raise SystemExit(0 if opts.quick and not os.environ.get("CI") else 2)
    folder = Path(tempfile.mkdtemp(prefix="gshare-bench-pods-"))
    cluster = Cluster("bench", folder / "c", testenv_bin()).start()
    node = devnode.RealNode(cluster, "node-real", [Card(REAL_CARD, 10, 81920, 100, A100, 0, True)])
    operator = None
    try:
        node.start()
        node.load_images(devnode.session_images(local_image), podman_env())
        node.start_provisioner(local_image("session-terminal"))
        cluster.add_gpu_nodes(
            [GpuNode("gpu-sim", [Card(SIMULATED_CARD, 10, 81920, 100, A100, 0, True)])]
        )
        cluster.install_crd()
        cluster.create_namespace(NAMESPACE)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GSHARE_")}
        env |= {"KUBECONFIG": str(cluster.kubeconfig), "GSHARE_OPERATOR_NAMESPACE": NAMESPACE}
        operator = subprocess.Popen(
            [sys.executable, "-m", "gshare", "operator"],
            env=env,
            stdout=(folder / "operator.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        with cluster.client() as client:
            # A first start of each kind warms the operator up; it is not counted.
            for real in (True, False):
                card = REAL_CARD if real else SIMULATED_CARD
                warm, _ = start(client, node.name if real else "gpu-sim", card, real)
                remove(client, warm)
            real_times, simulated_times, home_times = [], [], []
            for _ in range(opts.sessions):
                sid, seconds = start(client, node.name, REAL_CARD, True)
                real_times.append(seconds)
                remove(client, sid)
                sid, seconds = start(client, "gpu-sim", SIMULATED_CARD, False)
                simulated_times.append(seconds)
                remove(client, sid)
                sid, seconds = start(client, node.name, REAL_CARD, True, home=True)
                home_times.append(seconds)
                remove(client, sid)

            # Pause and resume: the pod goes, the volume stays, a new pod answers.
            sid, _ = start(client, node.name, REAL_CARD, True, home=True)
            # Idle a while, so the working set is that of a session nobody uses yet.
            time.sleep(2 if opts.quick else 10)
            memory = idle_memory(client, sid)
            merge = {"Content-Type": "application/merge-patch+json"}
            client.patch(
                f"{SESSIONS}/session-{sid}",
                json={"spec": {"desiredState": "Paused"}},
                headers=merge,
            ).raise_for_status()
            wait("the pause", lambda: pod_of(client, sid) is None)
            began = time.monotonic()
            client.patch(
                f"{SESSIONS}/session-{sid}",
                json={"spec": {"desiredState": "Running"}},
                headers=merge,
            ).raise_for_status()
            wait("the resumed page", lambda: page_answers(client, sid))
            resume = time.monotonic() - began
            remove(client, sid)

        p50, p95 = statistics.median(real_times), percentile(real_times, 0.95)
        s50, s95 = statistics.median(simulated_times), percentile(simulated_times, 0.95)
        h50, h95 = statistics.median(home_times), percentile(home_times, 0.95)
        print(f"{opts.sessions} JupyterLab starts of each kind, one at a time:")
        print(f"  real pod, to the page answering:     p50 {p50:6.2f}s  p95 {p95:6.2f}s")
        print(f"  kwok's simulated pod, to Ready:      p50 {s50:6.2f}s  p95 {s95:6.2f}s")
        print(f"  real pod with a new 1 GiB home:      p50 {h50:6.2f}s  p95 {h95:6.2f}s")
        print(f"ratio real/simulated: p50 {p50 / s50:.1f}  p95 {p95 / s95:.1f}")
        print(f"pause then resume, to the page answering again: {resume:.2f}s")
        print(f"an idle JupyterLab pod's working set: {memory / 2**20:.0f} MiB")
        check_goal(h95 <= 120, "every real start answers within 120 s (p95)", quick=opts.quick)
    finally:
        if operator is not None:
            operator.send_signal(signal.SIGTERM)
            operator.wait(30)
        node.stop()
        cluster.stop()


if __name__ == "__main__":
    main()
