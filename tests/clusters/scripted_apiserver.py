"""A local HTTPS server that answers like a Kubernetes API server, with answers a test scripts.

A real API server never sends a CRD without a spec or a Secret whose metadata is a list; a
registry must still survive one that does (a proxy, another product, a broken server). For
well-formed answers the tests use the real control plane in tests/kube."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VERSION = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0",
    "gitCommit": "0",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.26",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _certificate() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "scripted-apiserver")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


class ScriptedApiServer:
    """Answers GET `path` with `answers[path]` (JSON), /version with a version, else 404."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {"/version": VERSION}
        self.port = 0
        self.ca_pem = b""

    def kubeconfig(self, server_path: str = "") -> str:
        server = f"https://127.0.0.1:{self.port}{server_path}"
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "scripted",
                "contexts": [{"name": "scripted", "context": {"cluster": "c", "user": "u"}}],
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": server,
                            "certificate-authority-data": base64.b64encode(self.ca_pem).decode(),
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "scripted-token"}}],
            }
        )

    async def _answer(self, request: web.Request) -> web.Response:
        path = request.path.rstrip("/") or "/"  # as a real API server, /version/ is /version
        for prefix, answer in self.answers.items():
            if path == prefix or path.endswith(prefix):
                return web.json_response(answer)
        return web.json_response({"kind": "Status", "code": 404}, status=404)


@asynccontextmanager
async def scripted_apiserver() -> AsyncIterator[ScriptedApiServer]:
    server = ScriptedApiServer()
    cert_pem, key_pem = _certificate()
    server.ca_pem = cert_pem
    with tempfile.TemporaryDirectory() as folder:
        cert_file, key_file = Path(folder) / "tls.crt", Path(folder) / "tls.key"
        cert_file.write_bytes(cert_pem)
        key_file.write_bytes(key_pem)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", server._answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    server.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield server
    finally:
        await runner.cleanup()
