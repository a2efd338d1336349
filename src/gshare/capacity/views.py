"""Capacity responses: cards, models and tiers, policies, admission previews and the queue in
the API's shapes.

The functions that load what their rows name (the occupants' and requesters' emails, the cards
held for starving requests) run one query each however many rows they are given.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import (
    admission,
    boundaries,
    mig,
    preempting,
    queue,
    repository,
    service,
    shares,
)
from gshare.capacity.models import (
    AdmissionRequest,
    GpuModel,
    GpuTier,
    NodeDedication,
    ResourcePolicy,
)
from gshare.capacity.policy import EffectivePolicy
from gshare.capacity.schemas import (
    AdmissionPreviewOut,
    AheadOut,
    AheadReasonsOut,
    CardOut,
    DedicationOut,
    EffectivePolicyOut,
    EffectiveValueOut,
    GpuModelOut,
    GroupShareOut,
    GroupStandingOut,
    HeldForBookingOut,
    IncidentOut,
    MemberUseOut,
    MigChoicesOut,
    NodeOut,
    NoticeOut,
    NoticePage,
    OrgIsolationOut,
    OrgStandingOut,
    PlacedOut,
    PolicyOut,
    PreemptionCountOut,
    PriorityOut,
    QueueItemOut,
    StartOut,
    TierOut,
    UsableTierOut,
    UsePointOut,
)
from gshare.clusters import service as clusters
from gshare.credits.amounts import format_amount
from gshare.identity import service as identity

_SCOPE_NAMES = {0: "global", 1: "organization", 2: "group", 3: "user"}


# ---- cards ---------------------------------------------------------------------------------


async def cards_out(db: AsyncSession, views: Sequence[service.CardView]) -> list[CardOut]:
    emails = await identity.emails(db, [a.user_id for v in views for a in v.held])
    draining = await repository.reserved_cards(db, [v.card.id for v in views])
    drains = await preempting.drains_of_cards(db, [v.card.id for v in views])
    notices = await preempting.notices_of_allocations(db, [a.id for v in views for a in v.held])
    out = []
    for view in views:
        card = view.card
        occupied = {a.slot for a in view.held}
        out.append(
            CardOut(
                id=card.id,
                uuid=card.uuid,
                node=card.node,
                model=card.model,
                memory_mib=card.memory_mib,
                cores=card.cores,
                split_count=card.split_count,
                healthy=card.healthy,
                missing=card.missing,
                last_seen_at=card.last_seen_at,
                pool=card.pool,
                carved_tier=view.carved_tier.name if view.carved_tier else None,
                carved_slots=card.carved_slots if view.held else None,
                free_slots=view.free_slots if view.held else None,
                draining=card.id in draining,
                drain=drains.get(card.id),
                mig_instances=[
                    {
                        "profile": i["profile"],
                        "start": i["start"],
                        "occupied": i["start"] in occupied,
                    }
                    for i in card.mig_layout
                ],
                occupants=[
                    {
                        "request_id": a.request_id,
                        "user_id": a.user_id,
                        "user_email": emails.get(a.user_id, ""),
                        "group_id": a.group_id,
                        "tier": a.tier_name,
                        "slot": a.slot,
                        "mig_profile": a.mig_profile,
                        "vram_mib": a.vram_mib,
                        "status": a.status,
                        "admitted_at": a.admitted_at,
                        "notice_deadline": notices.get(a.id),
                    }
                    for a in view.held
                ],
            )
        )
    return out


async def card_out(db: AsyncSession, view: service.CardView) -> CardOut:
    return (await cards_out(db, [view]))[0]


def mig_choices_out(geometry_name: str, layouts: Sequence[Sequence[str]]) -> MigChoicesOut:
    geometry = mig.geometry_for(geometry_name)
    profiles = [p.name for p in geometry.profiles] if geometry else []
    return MigChoicesOut(
        geometry=geometry_name, profiles=profiles, layouts=[list(x) for x in layouts]
    )


# ---- models and tiers ----------------------------------------------------------------------


def tier_out(tier: GpuTier, model: GpuModel) -> TierOut:
    return TierOut(
        id=tier.id,
        model_id=model.id,
        model=model.name,
        name=tier.name,
        kind=tier.kind,
        denominator=tier.denominator,
        mig_profile=tier.mig_profile,
        vram_mib=tier.vram_mib,
        compute_percent=tier.compute_percent,
        price_per_hour=format_amount(tier.price),
        price_is_default=tier.price_is_default,
        retired_at=tier.retired_at,
    )


def usable_tiers_out(
    pairs: Sequence[tuple[GpuTier, GpuModel]], found: dict[uuid.UUID, admission.Availability]
) -> list[UsableTierOut]:
    out = []
    for tier, model in pairs:
        now = found[tier.id]
        wait = now.estimated_wait.total_seconds() if now.estimated_wait is not None else None
        out.append(
            UsableTierOut(
                **tier_out(tier, model).model_dump(),
                free_slots=now.free_slots,
                estimated_wait_seconds=wait,
            )
        )
    return out


def model_out(model: GpuModel, tiers: Sequence[GpuTier]) -> GpuModelOut:
    geometry = mig.geometry_for(model.name)
    return GpuModelOut(
        id=model.id,
        name=model.name,
        memory_mib=model.memory_mib,
        split_count=model.split_count,
        exclusive_price=format_amount(model.exclusive_price),
        mig_geometry=geometry.model if geometry else None,
        tiers=[tier_out(t, model) for t in tiers],
    )


# ---- policies ------------------------------------------------------------------------------


def policy_out(kind: str, scope_id: uuid.UUID | None, row: ResourcePolicy | None) -> PolicyOut:
    return PolicyOut(
        scope=kind,
        scope_id=scope_id,
        values=service.policy_values(row),
        updated_at=row.updated_at if row else None,
    )


def effective_policy_out(
    user_id: uuid.UUID, group_id: uuid.UUID, policy: EffectivePolicy
) -> EffectivePolicyOut:
    values = []
    for key, found in policy.values.items():
        value: Any = found.value
        if isinstance(value, frozenset):
            value = sorted(value)
        values.append(
            EffectiveValueOut(
                key=key,
                value=value,
                scope=_SCOPE_NAMES[int(found.scope.kind)] if found.scope else None,
                scope_id=found.scope.id if found.scope else None,
            )
        )
    return EffectivePolicyOut(user_id=user_id, group_id=group_id, values=values)


# ---- admission and the queue ---------------------------------------------------------------


def preview_out(found: admission.Preview) -> AdmissionPreviewOut:
    denial = found.denial
    return AdmissionPreviewOut(
        outcome=found.outcome,
        message=found.message,
        price_per_hour=format_amount(found.price),
        available_credits=format_amount(max(found.available, 0)),
        hours_affordable=found.hours,
        queue_position=found.position,
        estimated_wait_seconds=(
            found.estimated_wait.total_seconds() if found.estimated_wait else None
        ),
        policy_key=denial.key if denial else None,
        policy_scope=denial.scope if denial else None,
    )


def group_share_out(found: shares.GroupShare) -> GroupShareOut:
    def standing(s: shares.Standing) -> GroupStandingOut:
        return GroupStandingOut(
            group_id=s.group_id,
            name=s.name,
            usage=s.usage,
            in_use=s.in_use,
            share=s.share,
            weight=s.weight,
        )

    org = found.org

    return GroupShareOut(
        group=standing(found.group),
        org_id=found.org_id,
        org_name=found.org_name,
        cards=found.cards,
        org=OrgStandingOut(
            org_id=org.org_id,
            name=org.name,
            usage=org.usage,
            in_use=org.in_use,
            share=org.share,
            weight=org.weight,
        ),
        active_orgs=found.active_orgs,
        active_groups=found.active_groups,
        half_life_seconds=found.settings.half_life.total_seconds(),
        history=[UsePointOut(at=p.at, in_use=p.in_use, usage=p.usage) for p in found.history],
        groups=[standing(s) for s in found.groups],
        members=None
        if found.members is None
        else [
            MemberUseOut(user_id=m.user_id, email=m.email, usage=m.usage, in_use=m.in_use)
            for m in found.members
        ],
        in_words=shares.in_words(found),
    )


def held_out(held: tuple[int, datetime] | None) -> HeldForBookingOut | None:
    return None if held is None else HeldForBookingOut(cards=held[0], until=held[1])


def start_out(start: admission.StartForecast | None) -> StartOut | None:
    if start is None:
        return None
    return StartOut(
        likely_at=start.likely,
        surely_by=start.surely,
        first_likely_at=start.first_likely,
        forecast_at=start.at,
    )


def ahead_out(ahead: queue.Ahead) -> AheadOut:
    """What is ahead of a queued request, as data and in words."""
    return AheadOut(
        requests=ahead.requests,
        groups=ahead.groups,
        reasons=AheadReasonsOut(**{r: ahead.reasons.get(r, 0) for r in queue.AHEAD_REASONS}),
        in_words=queue.ahead_in_words(ahead),
    )


def _priority_out(standing: admission.Standing) -> PriorityOut:
    p = standing.priority
    return PriorityOut(
        value=p.value,
        waited_seconds=p.waited.total_seconds(),
        wait_bonus=p.wait_bonus,
        user_usage=p.user_usage,
        group_usage=p.group_usage,
        weight=p.weight,
        starving=p.starving,
        org_value=p.org_value,
        org_waited_seconds=p.org_waited.total_seconds(),
        org_usage=p.org_usage,
        org_weight=p.org_weight,
    )


async def queue_out(
    db: AsyncSession,
    rows: Sequence[AdmissionRequest],
    standings: dict[uuid.UUID, admission.Standing],
    *,
    with_priorities: bool,
) -> list[QueueItemOut]:
    """Requests with each queued one's standing; its priority only `with_priorities` (admins)."""
    emails = await identity.emails(db, list({r.user_id for r in rows}))
    freed_at = await preempting.promised_for_requests(
        db, [r.id for r in rows if r.status == "queued" and r.reserved_card_id]
    )
    items = []
    for row in rows:
        standing = standings.get(row.id) if row.status == "queued" else None
        items.append(
            QueueItemOut(
                id=row.id,
                user_id=row.user_id,
                user_email=emails.get(row.user_id, ""),
                group_id=row.group_id,
                model=row.model,
                tier=row.tier_name,
                status=row.status,
                reason=row.reason,
                enqueued_at=row.enqueued_at,
                decided_at=row.decided_at,
                position=standing.position if standing else None,
                estimated_wait_seconds=(
                    standing.estimated_wait.total_seconds() if standing else None
                ),
                reserved_card_id=row.reserved_card_id,
                card_freed_at=freed_at.get(row.id),
                priority=_priority_out(standing) if with_priorities and standing else None,
                ahead=ahead_out(standing.ahead) if standing else None,
                start=start_out(standing.start) if standing else None,
                waits_for=standing.waits_for if standing else None,
                held_for_booking=held_out(standing.held_for_booking) if standing else None,
            )
        )
    return items


# ---- isolation levels ----------------------------------------------------------------------


async def dedications_out(db: AsyncSession, found: Sequence[NodeDedication]) -> list[DedicationOut]:
    """Each dedication with its tenant's name and the label its node needs."""
    orgs = await identity.names(db, "org", [d.organization_id for d in found if d.organization_id])
    groups = await identity.names(db, "group", [d.group_id for d in found if d.group_id])
    names = orgs | groups
    return [
        DedicationOut(
            id=d.id,
            cluster_id=d.cluster_id,
            node=d.node,
            organization_id=d.organization_id,
            group_id=d.group_id,
            tenant_name=names.get(d.tenant_id, ""),
            label=str(d.tenant_id),
            created_at=d.created_at,
        )
        for d in found
    ]


async def nodes_out(db: AsyncSession, found: Sequence[boundaries.NodeView]) -> list[NodeOut]:
    """Each node, with `ready`: its label and taint match its dedication (none: neither)."""
    dedications = await dedications_out(db, [n.dedication for n in found if n.dedication])
    by_id = {d.id: d for d in dedications}
    items = []
    for n in found:
        dedication = by_id.get(n.dedication.id) if n.dedication else None
        wanted = dedication.label if dedication else None
        ready = n.dedicated_label == wanted and n.dedicated_tainted == (wanted is not None)
        items.append(
            NodeOut(
                cluster_id=n.cluster_id,
                node=n.node,
                cards=n.cards,
                usable_cards=n.usable_cards,
                user_namespaces=n.user_namespaces,
                runtime_classes=n.runtime_classes,
                dedicated_label=n.dedicated_label,
                dedicated_tainted=n.dedicated_tainted,
                reported_at=n.reported_at,
                dedication=dedication,
                ready=ready,
            )
        )
    return items


async def org_isolation_out(db: AsyncSession, report: boundaries.OrgIsolation) -> OrgIsolationOut:
    names = {s.cluster.id: s.cluster.name for s in await clusters.summaries(db)}
    return OrgIsolationOut(
        organization_id=report.org_id,
        level=report.level,
        level_set_at=report.level_set_at,
        group_levels={str(k): v for k, v in report.group_levels.items()},
        dedications=await dedications_out(db, report.dedications),
        placed=[
            PlacedOut(
                cluster_id=p.cluster_id,
                cluster_name=names.get(p.cluster_id, ""),
                node=p.node,
                level=p.level,
                runtime_class=p.runtime_class,
                user_namespaces=p.user_namespaces,
                dedicated=p.dedicated_to is not None,
                sessions=p.sessions,
                last_at=p.last_at,
            )
            for p in report.placed
        ],
        incidents=[IncidentOut.model_validate(i) for i in report.incidents],
        since=report.since,
    )


def notice_page(seen: preempting.NoticesSeen) -> NoticePage:
    """Each notice as the caller may read it. A notice has two sides: the group whose session
    is given notice, and the group the card is freed for. The caller reads everything of a
    side whose group they administer; of the other side, only its group, and only when both
    groups are of one organization: another organization's group, session, member, request
    and booking are not theirs to know."""

    def mine(group_id: uuid.UUID | None) -> bool:
        return group_id is not None and (seen.groups is None or group_id in seen.groups)

    items = []
    for row in seen.rows:
        out = NoticeOut.model_validate(row)
        together = row.for_group_id is not None and seen.orgs.get(row.group_id) == seen.orgs.get(
            row.for_group_id
        )
        hidden: dict[str, Any] = {}
        if not mine(row.group_id):
            hidden |= {"user_id": None, "session_id": None}
            if not together:
                hidden["group_id"] = None
        if row.for_group_id is not None and not mine(row.for_group_id):
            hidden |= {"request_id": None}
            if not together:
                hidden |= {"for_group_id": None, "booking_id": None}
        items.append(out.model_copy(update=hidden))
    return NoticePage(
        items=items,
        counts=[
            PreemptionCountOut(group_id=c.group_id, preempted=c.preempted, preempting=c.preempting)
            for c in seen.counts
        ],
    )
