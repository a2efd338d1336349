"""`gshare operator`: the kopf operator that reconciles GShareSession resources in one namespace."""

from __future__ import annotations

import logging
import os
from typing import Any

import kopf
from kubernetes_asyncio import client, config

from gshare.operator.manifests import API_GROUP, API_VERSION, PLURAL, OperatorConfig
from gshare.operator.reconcile import reconcile

log = logging.getLogger(__name__)
registry = kopf.OperatorRegistry()


def operator_config() -> OperatorConfig:
    defaults = OperatorConfig()
    return OperatorConfig(
        namespace=os.environ.get("GSHARE_OPERATOR_NAMESPACE", defaults.namespace),
        scheduler_name=os.environ.get("GSHARE_OPERATOR_SCHEDULER", defaults.scheduler_name),
        sessions_domain=os.environ.get("GSHARE_SESSIONS_DOMAIN", defaults.sessions_domain),
        auth_url=os.environ.get("GSHARE_SESSION_AUTH_URL", defaults.auth_url),
    )


@kopf.on.login(registry=registry)
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a cluster, its service account; elsewhere (tests, demo), KUBECONFIG."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup(registry=registry)
async def startup(memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = "gshare.io/operator"
    settings.posting.level = logging.WARNING
    configuration = client.Configuration()
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await config.load_kube_config(client_configuration=configuration)
    memo.api = client.ApiClient(configuration)
    memo.config = operator_config()


@kopf.on.cleanup(registry=registry)
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    await memo.api.close()


@kopf.on.resume(API_GROUP, API_VERSION, PLURAL, registry=registry)
@kopf.on.create(API_GROUP, API_VERSION, PLURAL, registry=registry)
@kopf.on.update(API_GROUP, API_VERSION, PLURAL, field="spec", registry=registry)
async def reconcile_session(
    name: str,
    uid: str,
    meta: kopf.Meta,
    spec: kopf.Spec,
    patch: kopf.Patch,
    memo: kopf.Memo,
    **_: Any,
) -> None:
    try:
        status = await reconcile(
            memo.api,
            name=name,
            uid=uid,
            generation=int(meta.get("generation", 0)),
            spec=spec,
            config=memo.config,
        )
    except client.exceptions.ApiException as exc:
        if exc.status in (400, 422):
            raise kopf.PermanentError(f"the cluster refused a child: {exc.reason}") from exc
        raise kopf.TemporaryError(f"cluster call failed: {exc.reason}", delay=5) from exc
    patch.status.update(status)


def run() -> None:
    namespace = operator_config().namespace
    kopf.configure(verbose=False)
    kopf.run(registry=registry, standalone=True, namespaces=[namespace])
