"""What a registered kubeconfig may contain: a server and embedded credentials, nothing that
makes the API read its own files, run commands or send credentials elsewhere."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gshare.clusters.kube import KubeconfigError, api_client, parse_kubeconfig
from tests.builders import Builder

PEM = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").decode()


def _config(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "lab",
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "admin"}}],
        "clusters": [
            {
                "name": "lab",
                "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": PEM},
            }
        ],
        "users": [{"name": "admin", "user": {"token": "abc"}}],
    }
    for path, value in changes.items():
        section, key = path.split("__")
        target = (
            config["clusters"][0]["cluster"] if section == "cluster" else config["users"][0]["user"]
        )
        target[key] = value
    return config


def test_a_plain_kubeconfig_is_reduced_to_what_was_checked() -> None:
    parsed = parse_kubeconfig(yaml.safe_dump(_config()))
    assert parsed["clusters"] == [
        {
            "name": "gshare",
            "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": PEM},
        }
    ]
    assert parsed["users"] == [{"name": "gshare", "user": {"token": "abc"}}]
    assert parse_kubeconfig(yaml.safe_dump(parsed)) == parsed  # stable once reduced


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"user__exec": {"command": "sh"}}, "exec"),
        (
            {"user__auth-provider": {"name": "gcp", "config": {"cmd-path": "/bin/sh"}}},
            "auth-provider",
        ),
        ({"user__tokenFile": "/var/run/secrets/token"}, "tokenFile"),
        ({"user__client-key": "/etc/shadow"}, "client-key"),
        ({"user__username": "admin"}, "username"),
        ({"cluster__proxy-url": "http://proxy.example"}, "proxy-url"),
        ({"cluster__insecure-skip-tls-verify": True}, "insecure-skip-tls-verify"),
        ({"cluster__certificate-authority": "/etc/ssl/ca.pem"}, "certificate-authority"),
        ({"cluster__server": "http://10.0.0.1:8080"}, "https://"),
        ({"cluster__certificate-authority-data": "%%%"}, "base64"),
        ({"cluster__certificate-authority-data": base64.b64encode(b"hello").decode()}, "PEM"),
        ({"user__token": ""}, "empty"),
        ({"user__token": "abc\n"}, "control characters"),
        ({"user__token": "a b"}, "spaces"),
    ],
)
def test_anything_else_is_refused_and_named(changes: dict[str, Any], says: str) -> None:
    with pytest.raises(KubeconfigError, match=says):
        parse_kubeconfig(yaml.safe_dump(_config(**changes)))


@pytest.mark.parametrize(
    "broken",
    [
        "",
        "[1, 2]",
        "clusters: [abc]\ncurrent-context: x",
        "clusters: {a: b}\ncurrent-context: x\ncontexts: []",
    ],
)
def test_malformed_kubeconfigs_are_refused(broken: str) -> None:
    with pytest.raises(KubeconfigError):
        parse_kubeconfig(broken)


def test_contexts_must_resolve() -> None:
    config = _config()
    config["current-context"] = "elsewhere"
    with pytest.raises(KubeconfigError, match="no context named 'elsewhere'"):
        parse_kubeconfig(yaml.safe_dump(config))
    config = _config()
    config["contexts"][0]["context"]["cluster"] = "gone"
    with pytest.raises(KubeconfigError, match="no cluster named 'gone'"):
        parse_kubeconfig(yaml.safe_dump(config))
    config = _config()
    del config["current-context"]
    with pytest.raises(KubeconfigError, match="current-context"):
        parse_kubeconfig(yaml.safe_dump(config))
    config = _config(user__token=None)
    del config["users"][0]["user"]["token"]
    with pytest.raises(KubeconfigError, match="embedded credentials"):
        parse_kubeconfig(yaml.safe_dump(config))


async def test_unusable_certificates_are_a_kubeconfig_error() -> None:
    config = copy.deepcopy(_config())
    with pytest.raises(KubeconfigError, match="cannot be used"):
        await api_client(parse_kubeconfig(yaml.safe_dump(config)))


async def test_a_plugin_that_would_run_a_command_never_runs(build: Builder, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plugin = {"name": "gcp", "config": {"cmd-path": "/bin/sh", "cmd-args": f"-c 'touch {marker}'"}}
    config = _config()
    config["users"][0]["user"] = {"auth-provider": plugin}
    admin: httpx.AsyncClient = await build.signed_in(await build.user(super_admin=True))
    response = await admin.post(
        "/api/v1/clusters", json={"name": "evil", "kubeconfig": yaml.safe_dump(config)}
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_kubeconfig"
    assert not marker.exists()
