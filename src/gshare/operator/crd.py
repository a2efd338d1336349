"""The GShareSession custom resource definition: a structural schema with validation,
a status subresource and printer columns. Pure: the operator installs it, tests apply it."""

from __future__ import annotations

from typing import Any

from gshare.operator.manifests import API_GROUP, API_VERSION, KIND, PLURAL

UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


def _string(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


GPU_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["node", "cardUUID"],
    "properties": {
        "node": _string(minLength=1, maxLength=253),
        "cardUUID": _string(minLength=1, maxLength=128),
        "vramMiB": {"type": "integer", "minimum": 1},
        "coresPercent": {"type": "integer", "minimum": 1, "maximum": 100},
        "migProfile": _string(pattern="^[0-9]+g\\.[0-9]+gb$"),
        "migInstance": _string(maxLength=128),
    },
    "x-kubernetes-validations": [
        {
            "rule": "!has(self.migProfile) || !has(self.coresPercent)",
            "message": "a MIG slice has fixed cores: give migProfile or coresPercent, not both",
        }
    ],
}

VOLUME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "kind", "mountPath"],
    "properties": {
        "name": _string(pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength=63),
        "kind": _string(enum=["home", "shared"]),
        "mountPath": _string(pattern="^/"),
        "accessMode": _string(enum=["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"]),
        "sizeGiB": {"type": "integer", "minimum": 1, "maximum": 16384},
        "claimName": _string(maxLength=253),
        "keep": {"type": "boolean"},
    },
}

# How far the session's pod is kept from others (absent: shared); the operator checks the same.
ISOLATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "level": _string(pattern="^[a-z0-9][a-z0-9+._-]*$", maxLength=63),
        "userNamespaces": {"type": "boolean"},
        "runtimeClassName": _string(
            pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
            maxLength=253,
        ),
        "dedicatedTo": _string(pattern=UUID_PATTERN),
    },
}

# Where the session's pod may connect (absent: open).
NETWORK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "egress": _string(enum=["open", "listed", "none"]),
        "cidrs": {"type": "array", "maxItems": 200, "items": _string(maxLength=64)},
    },
}

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "sessionId",
        "ownerId",
        "sessionType",
        "image",
        "cpuMillicores",
        "memoryMiB",
        "desiredState",
    ],
    "properties": {
        "sessionId": _string(pattern=UUID_PATTERN),
        "ownerId": _string(pattern=UUID_PATTERN),
        "sessionType": _string(enum=["vscode", "jupyterlab", "terminal"]),
        "image": _string(minLength=1, maxLength=512),
        "cpuMillicores": {"type": "integer", "minimum": 100, "maximum": 256000},
        "memoryMiB": {"type": "integer", "minimum": 128, "maximum": 4194304},
        "gpu": GPU_SCHEMA,
        "volumes": {"type": "array", "maxItems": 16, "items": VOLUME_SCHEMA},
        "desiredState": _string(enum=["Running", "Paused"]),
        # The control plane's number for this spec: reports say which one they describe.
        "revision": {"type": "integer", "minimum": 0},
        "isolation": ISOLATION_SCHEMA,
        "network": NETWORK_SCHEMA,
    },
    "x-kubernetes-validations": [
        {"rule": "self.sessionId == oldSelf.sessionId", "message": "sessionId cannot change"},
        {"rule": "self.ownerId == oldSelf.ownerId", "message": "ownerId cannot change"},
    ],
}

STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "phase": _string(enum=["Pending", "Running", "Paused", "Failed"]),
        "message": _string(),
        "observedGeneration": {"type": "integer"},
        "observedRevision": {"type": "integer"},
        "sequence": {"type": "integer"},
        "podName": _string(),
        "url": _string(),
        # How the current spec's pod is starting (startup.py), newest warnings last.
        "startupSteps": {
            "type": "array",
            "maxItems": 20,
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        # The last pod found outside the spec's isolation level (and replaced).
        "isolationDrift": {
            "type": "object",
            "properties": {
                "reason": _string(maxLength=500),
                "node": _string(maxLength=253),
                "pod": _string(maxLength=64),
                "at": _string(),
            },
        },
    },
    "x-kubernetes-preserve-unknown-fields": True,
}


def session_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{API_GROUP}"},
        "spec": {
            "group": API_GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": PLURAL,
                "singular": "gsharesession",
                "kind": KIND,
                "shortNames": ["gss"],
            },
            "versions": [
                {
                    "name": API_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {"spec": SPEC_SCHEMA, "status": STATUS_SCHEMA},
                        }
                    },
                    "additionalPrinterColumns": [
                        {"name": "Type", "type": "string", "jsonPath": ".spec.sessionType"},
                        {"name": "Desired", "type": "string", "jsonPath": ".spec.desiredState"},
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                        {"name": "Node", "type": "string", "jsonPath": ".spec.gpu.node"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                }
            ],
        },
    }
