"""The cluster registry API (super admin) and the internal key set."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from gshare.clusters import service
from gshare.clusters.callbacks import internal_keys
from gshare.clusters.kubeconfigs import KubeconfigStore, store_for
from gshare.clusters.schemas import (
    ClusterIsolationPut,
    ClusterOut,
    ClusterPage,
    ClusterRegister,
    RefusalOut,
    RefusalPage,
)
from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.pagination import encode_cursor, page_request
from gshare.kit.web import Cursor, Now, declare, settings_of

router = APIRouter()


def kubeconfig_store(request: Request) -> KubeconfigStore:
    return store_for(settings_of(request))


def _out(summary: service.Summary) -> dict[str, Any]:
    c = summary.cluster
    return {
        "id": c.id,
        "name": c.name,
        "api_server": c.api_server,
        "sessions_domain": c.sessions_domain,
        "status": c.status,
        "status_message": c.status_message,
        "last_contact_at": c.last_contact_at,
        "nodes": summary.nodes,
        "cards": summary.cards,
        "healthy_cards": summary.healthy,
        "missing_cards": summary.missing,
        "created_at": c.created_at,
        "sandbox_runtime_class": c.sandbox_runtime_class,
        "user_namespaces": c.user_namespaces,
    }


@router.get("/api/v1/clusters", response_model=ClusterPage, **declare(Action.CLUSTERS_READ, 400))
async def list_clusters(
    ctx: Ctx,
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
    cursor: Cursor = None,
) -> ClusterPage:
    page = page_request(limit, cursor)
    after = page.after_text() or ""
    rows = [s for s in await service.list_clusters(ctx) if s.cluster.name > after]
    items = rows[: page.limit]
    nxt = None
    if len(rows) > page.limit:
        nxt = encode_cursor((items[-1].cluster.name,))
    return ClusterPage(items=[ClusterOut(**_out(s)) for s in items], next_cursor=nxt)


@router.post(
    "/api/v1/clusters",
    status_code=201,
    response_model=ClusterOut,
    **declare(Action.CLUSTERS_MANAGE, 409),
)
async def register_cluster(body: ClusterRegister, ctx: Ctx, request: Request) -> ClusterOut:
    """Register a cluster from a kubeconfig with embedded credentials. The kubeconfig is kept in
    the secret store, never in the database; registration fails clearly when the API server
    cannot be reached or GShare's CRD is missing."""
    cluster = await service.register(
        ctx,
        kubeconfig_store(request),
        name=body.name,
        kubeconfig_text=body.kubeconfig,
        sessions_domain=body.sessions_domain,
        local_cluster=settings_of(request).local_cluster,
    )
    summary = (await service.summaries(ctx.db, [cluster.id]))[0]
    return ClusterOut(**_out(summary))


@router.get(
    "/api/v1/callback-refusals",
    response_model=RefusalPage,
    **declare(Action.CLUSTERS_READ, 400),
)
async def list_callback_refusals(
    ctx: Ctx,
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
    cursor: Cursor = None,
) -> RefusalPage:
    """Refused calls to the internal routes, per client address, reason and ten-minute window,
    newest first. The first refusal of each window is also in the audit log."""
    items, after = await service.list_refusals(ctx, page_request(limit, cursor))
    return RefusalPage(
        items=[RefusalOut.model_validate(r) for r in items],
        next_cursor=encode_cursor(after) if after else None,
    )


@router.get(
    "/api/v1/clusters/{cluster_id}",
    response_model=ClusterOut,
    **declare(Action.CLUSTERS_READ, 404),
)
async def get_cluster(cluster_id: uuid.UUID, ctx: Ctx) -> ClusterOut:
    """One cluster with its card counts; its cards are at `/api/v1/clusters/{id}/cards`."""
    return ClusterOut(**_out(await service.cluster_detail(ctx, cluster_id)))


@router.put(
    "/api/v1/clusters/{cluster_id}/isolation",
    response_model=ClusterOut,
    **declare(Action.ISOLATION_MANAGE, 404),
)
async def put_cluster_isolation(
    cluster_id: uuid.UUID, body: ClusterIsolationPut, ctx: Ctx
) -> ClusterOut:
    """Name the cluster's sandbox RuntimeClass, and whether every node runs user namespaces."""
    await service.set_isolation(
        ctx, cluster_id, body.sandbox_runtime_class, user_namespaces=body.user_namespaces
    )
    return ClusterOut(**_out(await service.cluster_detail(ctx, cluster_id)))


@router.delete(
    "/api/v1/clusters/{cluster_id}", status_code=204, **declare(Action.CLUSTERS_MANAGE, 404, 409)
)
async def remove_cluster(cluster_id: uuid.UUID, ctx: Ctx, request: Request) -> None:
    """Forget a cluster with no sessions left. The worker deletes its kubeconfig on its next
    pass (the API may write kubeconfigs but never read or delete one)."""
    await service.remove(ctx, cluster_id, local_cluster=settings_of(request).local_cluster)


@router.get("/.well-known/gshare-internal-jwks.json", **declare(Action.PUBLIC))
async def jwks(request: Request, now: Now) -> dict[str, Any]:
    """The public keys operator tokens are signed with."""
    return (await internal_keys(request).get(now)).jwks()
