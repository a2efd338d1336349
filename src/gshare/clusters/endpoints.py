"""The cluster registry API (super admin), the internal key set, and operator callbacks."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Request

from gshare.audit.service import AuditEvent, record_later
from gshare.clusters import service
from gshare.clusters.kubeconfigs import KubeconfigStore, store_for
from gshare.clusters.schemas import (
    CardOut,
    ClusterDetailOut,
    ClusterOut,
    ClusterPage,
    ClusterRegister,
    InventoryAck,
    InventoryReport,
)
from gshare.clusters.tokens import InvalidToken, KeyFile
from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.errors import NotAuthenticated
from gshare.kit.pagination import page_request
from gshare.kit.web import DbSession, Now, client_of, declare, settings_of

router = APIRouter()


def internal_keys(request: Request) -> KeyFile:
    keys: KeyFile | None = getattr(request.app.state, "internal_keys", None)
    if keys is None:
        keys = KeyFile(settings_of(request).data_dir / "internal-keys.json")
        request.app.state.internal_keys = keys
    return keys


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
    }


@router.get("/api/v1/clusters", response_model=ClusterPage, **declare(Action.CLUSTERS_READ, 400))
async def list_clusters(
    ctx: Ctx,
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> ClusterPage:
    page = page_request(limit, cursor)
    after = page.after_text() or ""
    rows = [s for s in await service.list_clusters(ctx) if s.cluster.name > after]
    items = rows[: page.limit]
    nxt = None
    if len(rows) > page.limit:
        from gshare.kit.pagination import encode_cursor

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
    )
    summary = (await service.summaries(ctx.session, [cluster.id]))[0]
    return ClusterOut(**_out(summary))


@router.get(
    "/api/v1/clusters/{cluster_id}",
    response_model=ClusterDetailOut,
    **declare(Action.CLUSTERS_READ, 404),
)
async def get_cluster(cluster_id: uuid.UUID, ctx: Ctx) -> ClusterDetailOut:
    summary, cards = await service.cluster_detail(ctx, cluster_id)
    return ClusterDetailOut(**_out(summary), card_list=[CardOut.model_validate(c) for c in cards])


@router.delete(
    "/api/v1/clusters/{cluster_id}", status_code=204, **declare(Action.CLUSTERS_MANAGE, 404, 409)
)
async def remove_cluster(
    cluster_id: uuid.UUID, ctx: Ctx, request: Request, after: BackgroundTasks
) -> None:
    await service.remove(ctx, cluster_id)
    # Runs once the response is out, so after the commit; a failed removal keeps its kubeconfig.
    after.add_task(kubeconfig_store(request).delete, cluster_id)


@router.get("/.well-known/gshare-internal-jwks.json", **declare(Action.PUBLIC))
async def jwks(request: Request, now: Now) -> dict[str, Any]:
    """The public keys operator tokens are signed with."""
    return internal_keys(request).get(now).jwks()


def refused_callback(
    request: Request, now: Any, reason: str, *, target_type: str, target_id: Any
) -> NotAuthenticated:
    """The 401 for a callback that is not allowed, with its audit entry written after the
    request's rollback."""
    event = AuditEvent(
        action="cluster.callback",
        outcome="denied",
        target_type=target_type,
        target_id=str(target_id),
        detail={"reason": reason[:300], "client": client_of(request), "path": request.url.path},
    )
    return NotAuthenticated(
        "The callback's token is not valid.",
        code="invalid_token",
        durable=[record_later(event, now=now)],
    )


def verified_cluster(request: Request, now: Any, *, target_type: str, target_id: Any) -> uuid.UUID:
    """The cluster a callback's bearer token speaks for; a 401 for anything but a valid one."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    try:
        if scheme.lower() != "bearer" or not token:
            raise InvalidToken("no bearer token")
        return uuid.UUID(internal_keys(request).get(now).verify(token.strip(), now))
    except (InvalidToken, ValueError) as exc:
        raise refused_callback(
            request, now, str(exc), target_type=target_type, target_id=target_id
        ) from None


async def calling_cluster(
    request: Request, cluster_id: uuid.UUID, now: Now, session: DbSession
) -> uuid.UUID:
    """The cluster in the path, when the bearer token speaks for it.

    It takes the request's transaction so that a refusal is audited after its rollback."""
    claimed = verified_cluster(request, now, target_type="cluster", target_id=cluster_id)
    if claimed != cluster_id:
        raise refused_callback(
            request,
            now,
            f"a token of cluster {claimed} called for cluster {cluster_id}",
            target_type="cluster",
            target_id=cluster_id,
        )
    return cluster_id


Caller = Annotated[uuid.UUID, Depends(calling_cluster)]


@router.put(
    "/internal/v1/clusters/{cluster_id}/inventory",
    response_model=InventoryAck,
    **declare(Action.CLUSTER_CALLBACK, 404),
)
async def report_inventory(
    cluster_id: uuid.UUID, body: InventoryReport, caller: Caller, session: DbSession, now: Now
) -> InventoryAck:
    """The operator's whole GPU inventory, parsed from HAMi's node annotations."""
    applied = await service.apply_inventory(session, caller, body, now)
    return InventoryAck(applied=applied, sequence=body.sequence)
