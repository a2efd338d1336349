"""Sessions' use cases: creating, pausing, resuming, stopping and deleting a session, and
following what its operator and the admission queue report. (Letting its owner into its page is
entry.py's.)

Each change of state goes through `_move`, which asks `lifecycle.py` whether it is allowed and
does what it says in the caller's transaction: releasing the allocation and settling the hold
(capacity and credits), withdrawing a queued request, bumping the resource's wanted generation
(the apply loop in tasks.py takes it to the cluster after commit), recording the transition,
announcing it and, on a resume, asking capacity for a card again. Nothing here commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit import service as audit_log
from gshare.capacity import admission, boundaries, preempting
from gshare.capacity import service as capacity
from gshare.capacity.admission import Ask, DequeueSummary
from gshare.clusters import service as clusters
from gshare.credits import operations as credits
from gshare.events import outbox
from gshare.events.notifications import notify_user
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action
from gshare.kit.errors import Conflict, Forbidden, GShareError, NotFound
from gshare.kit.ids import new_id
from gshare.kit.settings import Settings
from gshare.sessions import lifecycle, metering, repository, startup
from gshare.sessions.lifecycle import InvalidTransition
from gshare.sessions.models import InteractiveSession, SessionVolume, Volume
from gshare.sessions.schemas import SessionCreate, StatusReport
from gshare.sessions.status import is_newer

if TYPE_CHECKING:
    from gshare.capacity.models import Allocation

SESSION_CHANGED = "session.changed"
HOME_MOUNT = "/home/gshare"
DEFAULT_HOME_GIB = 10


class NotOwned(Exception):
    """A status report about a session the calling cluster does not run."""


class InvalidTransitionError(Conflict):
    code = "invalid_transition"

    def __init__(self, state: str, action: str) -> None:
        self.state = state
        super().__init__(f"A session that is {state} cannot be {_PAST.get(action, action)}.")

    def body(self) -> dict[str, object]:
        body = super().body()
        body["error"] |= {"state": self.state}
        return body


_PAST = {"pause": "paused", "resume": "resumed", "stop": "stopped", "keep_running": "kept running"}


def _not_found() -> NotFound:
    return NotFound("No such session.", code="session_not_found")


# ---- moving between states -----------------------------------------------------------------


async def announce(db: AsyncSession, row: InteractiveSession) -> None:
    await outbox.record(
        db,
        SESSION_CHANGED,
        outbox.Audience(user_id=row.owner_id, group_id=row.group_id),
        {"session_id": str(row.id), "state": row.state},
    )


async def _settle(db: AsyncSession, row: InteractiveSession, now: datetime, reason: str) -> None:
    """Release the allocation at once and settle its hold for the GPU time not yet captured."""
    if row.request_id is None:
        return
    used = None
    if row.hold_id is not None and row.billed_from is not None and row.metered_until is not None:
        rest = metering.capture(row.price_per_hour, row.billed_from, row.metered_until, now)
        used = rest.amount
        # What the hold can still pay is what will be captured (it is locked until commit).
        payable = await credits.payable(db, row.hold_id)
        row.cost += min(rest.amount, payable)
        row.metered_until = rest.until
    await admission.release(db, row.request_id, now, reason=reason[:20], used=used)
    row.hold_id = None


async def _move(
    db: AsyncSession,
    row: InteractiveSession,
    action: lifecycle.Action,
    now: datetime,
    *,
    reason: str,
    actor_id: uuid.UUID | None = None,
    release_reason: str | None = None,
    settings: Settings | None = None,
) -> lifecycle.Transition:
    """Change the session's state as `lifecycle.TABLE` says for `action`. A change that asks
    for a card again (`admit`) needs the `settings` admission runs with."""
    try:
        step = lifecycle.transition(row.state, action)
    except InvalidTransition as exc:
        raise InvalidTransitionError(row.state, action) from exc
    if step.release:
        await _settle(db, row, now, release_reason or action)
    if step.cancel and row.request_id is not None:
        await admission.withdraw(db, row.request_id, now, reason)
    previous = row.state
    row.state, row.state_reason, row.state_changed_at = step.to, reason[:1000], now
    if step.desired in ("Running", "Paused"):
        row.desired_state = step.desired
    if step.desired is not None:
        row.spec_generation += 1
    if step.to == "running":
        row.running_since = now
    if step.to != "running":
        row.idle_since = row.idle_warned_at = row.keep_running_until = None
    if step.to == "stopped":
        row.ended_at = now
    await repository.record_transition(db, row.id, previous, step.to, reason, actor_id, now)
    await announce(db, row)
    if step.admit:
        assert settings is not None, f"{action!r} asks for a card: admission needs the settings"
        await _admit(db, row, now, settings)
    return step


async def _allocated(
    db: AsyncSession, row: InteractiveSession, allocation: Allocation, now: datetime
) -> None:
    """The session got its allocation: bill it from now, and start its pod."""
    # A session without a card runs on the cluster admission chose for its isolation level.
    chosen = (allocation.boundary or {}).get("cluster")
    cluster_id = allocation.cluster_id or row.cluster_id or (uuid.UUID(chosen) if chosen else None)
    if cluster_id is None:  # admission names a cluster for every allocation it makes
        raise admission.NoCapacity("No cluster is connected to run sessions on.")
    if row.cluster_id is None:
        # A new resource: its generations start again.
        row.observed_generation = row.status_sequence = 0
    row.cluster_id = cluster_id
    row.price_per_hour = allocation.price_per_hour
    row.hold_id = allocation.hold_id
    row.billed_from = row.metered_until = allocation.admitted_at if allocation.hold_id else None
    mounted = [m.Volume.id for m in await repository.mounts_of(db, [row.id])]
    await repository.pin_volumes(db, mounted, cluster_id)
    reason = "A card was allocated." if allocation.card_id else "CPU and memory were allocated."
    # A new start: the time it entered the queue is when it was asked for.
    requested = row.state_changed_at or now
    await _move(db, row, "admitted", now, reason=reason)
    row.startup_revision, row.startup_requested_at = row.spec_generation, requested
    row.startup_steps = []


async def _admit(
    db: AsyncSession, row: InteractiveSession, now: datetime, settings: Settings
) -> None:
    """Ask capacity for a card (a new request each time); start now or wait in the queue."""
    row.request_id = new_id()
    await db.flush()
    outcome = await admission.admit(
        db,
        Ask(
            row.request_id,
            row.owner_id,
            row.group_id or uuid.UUID(int=0),
            row.tier_id,
            row.cpu_millicores,
            row.memory_mib,
            cluster_id=await _pinned_cluster(db, row),
            session_id=row.id,
        ),
        now,
        settings,
    )
    if outcome.allocation is not None:
        await _allocated(db, row, outcome.allocation, now)


async def _pinned_cluster(db: AsyncSession, row: InteractiveSession) -> uuid.UUID | None:
    """The cluster the session's volumes live in, if any does."""
    for mount in await repository.mounts_of(db, [row.id]):
        if mount.Volume.cluster_id is not None:
            return mount.Volume.cluster_id  # type: ignore[no-any-return]
    return None


# ---- the owner's actions -------------------------------------------------------------------


async def _own(ctx: Context, session_id: uuid.UUID, *, lock: bool = False) -> InteractiveSession:
    row = await repository.session_row(ctx.db, session_id, lock=lock)
    if row is None or row.owner_id != ctx.actor.user_id or row.deleted_at is not None:
        raise _not_found()
    return row


async def get(ctx: Context, session_id: uuid.UUID) -> InteractiveSession:
    """One's own session; an admin of its group may read it too."""
    require(ctx, Action.SESSION_READ_OWN, target_type="session", target_id=session_id)
    row = await repository.session_row(ctx.db, session_id)
    if row is None or row.deleted_at is not None:
        raise _not_found()
    if row.owner_id != ctx.actor.user_id and not await _administers(ctx, row.group_id):
        raise _not_found()
    return row


async def _administers(ctx: Context, group_id: uuid.UUID | None) -> bool:
    if ctx.actor.is_super_admin:
        return True
    if group_id is None:
        return False
    org_id = await identity.group_org(ctx.db, group_id)
    return org_id is not None and ctx.actor.administers_group(group_id, org_id)


async def list_sessions(
    ctx: Context,
    *,
    admin: bool,
    states: Sequence[str] | None = None,
    group_id: uuid.UUID | None = None,
) -> list[InteractiveSession]:
    """The caller's sessions; or (admins) every session in the groups they administer."""
    wanted = [s for s in states or () if s in lifecycle.STATES]
    if states and not wanted:
        return []
    if not admin:
        require(ctx, Action.SESSION_READ_OWN, target_type="session")
        rows = await repository.sessions_of(ctx.db, owner_id=ctx.actor.user_id, states=wanted)
        return [r for r in rows if group_id is None or r.group_id == group_id]
    require(ctx, Action.SESSION_READ_SCOPE, target_type="session")
    groups: set[uuid.UUID] | None = None
    if not ctx.actor.is_super_admin:
        groups = set(ctx.actor.group_admin_of)
        for org_id in ctx.actor.org_admin_of:
            groups |= {g.id for g in await identity.groups_of_org(ctx.db, org_id)}
    if group_id is not None:
        groups = {group_id} if groups is None or group_id in groups else set()
    return await repository.sessions_of(
        ctx.db, group_ids=None if groups is None else sorted(groups), states=wanted
    )


async def create(ctx: Context, body: SessionCreate, settings: Settings) -> InteractiveSession:
    """Start a session: check its image and volumes, admit it (or queue it), record it."""
    require(ctx, Action.SESSION_CREATE, target_type="session")
    db, now, user_id = ctx.db, ctx.now, ctx.actor.user_id
    picture = await repository.image(db, body.image_id)
    if picture is None or not picture.enabled or picture.session_type != body.session_type:
        raise NotFound(
            "No such image in the catalog for this session type.", code="image_not_found"
        )
    org_id = await identity.membership_org(db, user_id, body.group_id, now)
    if org_id is None:
        # Whether a group one is not in exists is not one's business.
        raise NotFound("You are in no such group.", code="group_not_found")
    row = InteractiveSession(
        id=new_id(),
        owner_id=user_id,
        session_type=body.session_type,
        name=body.name or f"{body.session_type} {now:%Y-%m-%d %H:%M}",
        group_id=body.group_id,
        image=picture.reference,
        tier_id=body.tier_id,
        cpu_millicores=body.cpu_millicores,
        memory_mib=body.memory_mib,
        desired_state="Running",
        state="queued",
        state_reason="Waiting for a card.",
        state_changed_at=now,
        created_at=now,
        phase="Pending",
        phase_message="",
        observed_generation=0,
        status_sequence=0,
    )
    await repository.insert_session(db, row)
    mounts = await _volumes_for(ctx, row, body, org_id)
    await repository.mount(db, mounts)
    await repository.record_transition(db, row.id, None, "queued", "Created.", user_id, now)
    await _admit(db, row, now, settings)
    if row.state == "queued":
        await announce(db, row)
    await audit(
        ctx,
        "session.create",
        target_type="session",
        target_id=row.id,
        group_id=body.group_id,
        detail={"type": body.session_type, "tier_id": str(body.tier_id) if body.tier_id else None},
    )
    return row


async def _volumes_for(
    ctx: Context, row: InteractiveSession, body: SessionCreate, org_id: uuid.UUID
) -> list[SessionVolume]:
    """The home volume (an existing one of the owner's, or a new one within `storage_gb`) and
    the shared volumes of the owner's groups the request names."""
    db, now, user_id = ctx.db, ctx.now, ctx.actor.user_id
    # One create at a time per user: the storage total below cannot be raced past.
    await admission.lock_user(db, user_id)
    if body.home_volume_id is not None:
        home = await repository.volume(db, body.home_volume_id, lock=True)
        if home is None or home.kind != "home" or home.owner_id != user_id or home.deleted_at:
            raise NotFound("No such volume.", code="volume_not_found")
        busy = [u for u in await repository.users_of_volumes(db, [home.id]) if u.id != row.id]
        if busy:
            raise Conflict(
                "That home volume is in use by another session; stop it first.",
                code="volume_in_use",
            )
    else:
        size = body.home_size_gib or DEFAULT_HOME_GIB
        policy = await capacity.effective_for(db, user_id, body.group_id, org_id)
        limit = policy["storage_gb"].value
        used = await repository.home_total_gib(db, user_id)
        if isinstance(limit, int) and used + size > limit:
            raise Forbidden(
                f"A {size} GiB home volume would bring your volumes to {used + size} GiB; "
                f"the policy allows {limit} GiB.",
                code="storage_limit",
            )
        home = Volume(
            id=new_id(),
            kind="home",
            owner_id=user_id,
            name=f"home-{str(row.id)[:8]}",
            size_gib=size,
            access_mode="ReadWriteOnce",
            created_by=user_id,
            created_at=now,
        )
        await repository.insert_volume(db, home)
    row.home_volume_id = home.id
    mounts = [
        SessionVolume(session_id=row.id, volume_id=home.id, mount_path=HOME_MOUNT, read_only=False)
    ]
    shared_volumes: list[Volume] = []
    for volume_id in dict.fromkeys(body.shared_volume_ids):
        # Locked: a deletion waits for this mount to commit, then finds it in use.
        shared = await repository.volume(db, volume_id, lock=True)
        if (
            shared is None
            or shared.kind != "shared"
            or shared.deleted_at is not None
            # Only the volumes of the group the session runs for (it bills and is seen there).
            or shared.group_id != body.group_id
        ):
            raise NotFound("No such volume.", code="volume_not_found")
        shared_volumes.append(shared)
        mounts.append(
            SessionVolume(
                session_id=row.id,
                volume_id=shared.id,
                mount_path=f"/shared/{shared.name}",
                read_only=shared.access_mode == "ReadOnlyMany",
            )
        )
    pinned = {v.cluster_id for v in [home, *shared_volumes] if v.cluster_id is not None}
    if len(pinned) > 1:
        raise Conflict("These volumes live in different clusters.", code="volumes_apart")
    return mounts


async def _by_owner(
    ctx: Context,
    session_id: uuid.UUID,
    action: lifecycle.Action,
    reason: str,
    settings: Settings | None = None,
) -> InteractiveSession:
    """The owner asks for `action` on their session: check, move, audit."""
    require(ctx, Action.SESSION_CONTROL, target_type="session", target_id=session_id)
    row = await _own(ctx, session_id, lock=True)
    await _move(
        ctx.db,
        row,
        action,
        ctx.now,
        reason=reason,
        actor_id=ctx.actor.user_id,
        settings=settings,
    )
    await audit(
        ctx, f"session.{action}", target_type="session", target_id=row.id, group_id=row.group_id
    )
    return row


async def pause(ctx: Context, session_id: uuid.UUID) -> InteractiveSession:
    return await _by_owner(ctx, session_id, "pause", "Paused by its owner.")


async def still_in_group(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID | None, now: datetime
) -> bool:
    """Whether the owner is still in the group the session runs for (it uses its cards)."""
    return group_id is not None and await identity.is_current_member(db, user_id, group_id, now)


def left_group() -> Forbidden:
    return Forbidden(
        "You are no longer in the group this session runs for.", code="not_in_session_group"
    )


async def resume(ctx: Context, session_id: uuid.UUID, settings: Settings) -> InteractiveSession:
    row = await _own(ctx, session_id)
    if not await still_in_group(ctx.db, row.owner_id, row.group_id, ctx.now):
        raise left_group()
    return await _by_owner(ctx, session_id, "resume", "Resumed by its owner.", settings)


async def stop(ctx: Context, session_id: uuid.UUID) -> InteractiveSession:
    return await _by_owner(ctx, session_id, "stop", "Stopped by its owner.")


async def delete(ctx: Context, session_id: uuid.UUID, *, delete_home: bool) -> None:
    """Stop the session if it is not stopped yet, and take it off its owner's list; with
    `delete_home`, its home volume goes too (unless another session uses it)."""
    require(ctx, Action.SESSION_CONTROL, target_type="session", target_id=session_id)
    row = await _own(ctx, session_id, lock=True)
    if row.state not in ("stopping", "stopped"):
        await _move(
            ctx.db,
            row,
            "stop",
            ctx.now,
            reason="Deleted by its owner.",
            actor_id=ctx.actor.user_id,
        )
    row.deleted_at = ctx.now
    if delete_home and row.home_volume_id is not None:
        home = await repository.volume(ctx.db, row.home_volume_id, lock=True)
        others = [
            u
            for u in await repository.users_of_volumes(ctx.db, [row.home_volume_id])
            if u.id != row.id
        ]
        if home is not None and home.deleted_at is None and not others:
            home.deleted_at = ctx.now
    await announce(ctx.db, row)
    await audit(
        ctx,
        "session.delete",
        target_type="session",
        target_id=row.id,
        group_id=row.group_id,
        detail={"delete_home": delete_home},
    )


async def keep_running(ctx: Context, session_id: uuid.UUID) -> InteractiveSession:
    """Defer an idle pause by the policy's keep-running limit (once per idle spell)."""
    require(ctx, Action.SESSION_CONTROL, target_type="session", target_id=session_id)
    db, now = ctx.db, ctx.now
    row = await _own(ctx, session_id, lock=True)
    if row.state != "running":
        raise InvalidTransitionError(row.state, "keep_running")
    if row.idle_warned_at is None:
        raise Conflict(
            "The session has not been warned of an idle pause; there is nothing to defer.",
            code="not_idle",
        )
    policy = await _policy_of(db, row)
    limit = policy.keep_running_minutes
    if not limit:
        raise Forbidden(
            "The policy does not allow keeping an idle session running.", code="policy_denied"
        )
    if row.keep_running_until is not None and row.keep_running_until > now:
        raise Conflict("The session is already kept running.", code="already_kept_running")
    row.keep_running_until = now + timedelta(minutes=limit)
    row.idle_warned_at = None
    row.kept_running_minutes += limit
    await announce(db, row)
    await audit(
        ctx, "session.keep_running", target_type="session", target_id=row.id, group_id=row.group_id
    )
    return row


# ---- what the operator and the queue report -------------------------------------------------


async def record_status(
    db: AsyncSession,
    cluster_id: uuid.UUID,
    session_id: uuid.UUID,
    report: StatusReport,
    now: datetime,
) -> bool:
    """Store an operator's report if it is newer than the stored one, and follow it: a ready
    pod makes a starting session running, a failed one fails it, a pod gone after a pause
    makes it paused, a pod gone without one loses it. Returns whether the report was newer.

    Raises NotOwned unless the session is placed on `cluster_id`."""
    clusters.refuse_future_sequence(report.sequence, now)
    row = await repository.session_row(db, session_id, lock=True)
    if row is None or row.cluster_id != cluster_id:
        raise NotOwned(f"session {session_id} does not run on cluster {cluster_id}")
    await clusters.heard_from(db, cluster_id, now)
    if row.ended_at is not None:
        return False  # an ended session's record is final
    if report.drift is not None:
        await _record_drift(db, row, cluster_id, report, now)
    if not is_newer(
        stored_generation=row.observed_generation,
        stored_sequence=row.status_sequence,
        generation=report.generation,
        sequence=report.sequence,
    ):
        return False
    row.observed_generation = report.generation
    row.status_sequence = report.sequence
    row.phase = report.phase
    row.phase_message = report.message
    row.status_at = now
    if report.steps is not None and report.revision and report.revision == row.startup_revision:
        await _record_steps(db, row, report, now)
    # Revision 0: a resource applied before revisions were given (or an operator that does not
    # report them), followed as before.
    if report.revision and report.revision != row.spec_generation:
        # About a spec the session has moved on from (a pod of it may still be going away).
        return True
    action = _followed(row, report.phase)
    if action is not None:
        reason = {
            "pod_running": "The session is ready.",
            "pod_failed": f"The pod failed: {report.message}"
            if report.message
            else "The pod failed.",
            "pod_gone": "The pod is gone; the card was released.",
            "lose": "The pod is gone without a pause.",
        }[action]
        await _move(db, row, action, now, reason=reason, release_reason=action.removeprefix("pod_"))
        if action in ("pod_failed", "lose"):
            await _tell_owner(
                db,
                row,
                "session.failed",
                now,
                title=f"Your session {row.name} stopped unexpectedly",
                body=reason + " Its volumes are kept; resume it to start it again.",
            )
    return True


async def _record_drift(
    db: AsyncSession,
    row: InteractiveSession,
    cluster_id: uuid.UUID,
    report: StatusReport,
    now: datetime,
) -> None:
    """Record a pod found outside its level as an incident, whatever the report's order: a
    finding is a fact about one pod, kept once. A time it cannot be (the future, or before
    the session) is read as now."""
    drift = report.drift
    assert drift is not None
    found_at = drift.at
    if found_at > now + clusters.FUTURE_SKEW or found_at < row.created_at:
        found_at = now
    level = "shared"
    if row.request_id is not None:
        allocation = await admission.allocation_of(db, row.request_id)
        isolation = ((allocation.boundary if allocation else None) or {}).get("isolation") or {}
        level = str(isolation.get("level") or "shared")
    await boundaries.record_incident(
        db,
        session_id=row.id,
        session_name=row.name,
        cluster_id=cluster_id,
        group_id=row.group_id,
        level=level,
        drift=boundaries.Drift(drift.reason, drift.node, drift.pod, found_at),
        now=now,
    )


async def _record_steps(
    db: AsyncSession, row: InteractiveSession, report: StatusReport, now: datetime
) -> None:
    """Merge the report's start-up steps into those kept for the session's latest start, less
    any whose time cannot be true (a cluster's clock may be off, or its status forged). A step
    changes no state, so the owner's console is told on its own."""
    reported = startup.sane(
        (startup.Step(**s.model_dump()) for s in report.steps or []),
        now=now,
        not_before=row.startup_requested_at or row.created_at,
        skew=clusters.FUTURE_SKEW,
    )
    kept = startup.to_json(startup.merged(startup.from_json(row.startup_steps), reported))
    if kept != row.startup_steps:
        row.startup_steps = kept
        await announce(db, row)


def _followed(row: InteractiveSession, phase: str) -> lifecycle.Action | None:
    if phase == "Running" and row.state == "starting" and row.desired_state == "Running":
        return "pod_running"
    if phase == "Failed" and row.state in ("starting", "running"):
        return "pod_failed"
    if phase == "Paused" and row.state == "pausing":
        return "pod_gone"
    if phase == "Pending" and row.state == "running" and row.desired_state == "Running":
        return "lose"
    return None


async def follow_queue(db: AsyncSession, summary: DequeueSummary, now: datetime) -> None:
    """The queue admitted or refused requests: sessions waiting on them start, or go back."""
    refused = summary.insufficient_credits + summary.refused + summary.dropped
    rows = await repository.by_requests(db, summary.admitted + refused)
    admitted = set(summary.admitted)
    for row in rows:
        if row.state not in lifecycle.WAITING:
            continue
        if row.request_id in admitted:
            allocation = await admission.allocation_of(db, row.request_id)
            if allocation is not None:
                await _allocated(db, row, allocation, now)
                await announce_started(db, row, now)
            continue
        reason = await admission.decision_reason(db, row.request_id) if row.request_id else None
        why = reason or "The queue refused it."
        await _move(db, row, "refused", now, reason=why)
        await _tell_owner(
            db,
            row,
            "session.refused",
            now,
            title=f"Your session {row.name} could not start",
            body=why,
        )


async def repair_leaks(db: AsyncSession, now: datetime) -> int:
    """Give back whatever is held for a session that does not hold it: an allocation (with its
    hold) whose session has ended or moved on to another admission, and an open hold that is
    not its session's. Each is written to the audit log. Nothing should ever need this, as
    every writer locks in one order; it makes a leak (a bug, a restored backup) last at most
    one tick instead of for ever. Runs in a transaction of its own: it locks sessions first."""
    held = await admission.held_for_sessions(db)
    holds = await credits.open_holds(db)
    rows = await repository.sessions_by_ids(db, [*held.values(), *(s for _, s in holds)])

    def keeps(row: InteractiveSession | None, request_id: uuid.UUID) -> bool:
        return row is None or (row.request_id == request_id and row.state in lifecycle.HOLDING)

    def owns(row: InteractiveSession, hold_id: uuid.UUID) -> bool:
        return row.state in lifecycle.HOLDING and row.hold_id == hold_id

    suspects = {s for r, s in held.items() if not keeps(rows.get(s), r)}
    suspects |= {s for h, s in holds if s in rows and not owns(rows[s], h)}
    if not suspects:
        return 0
    locked = await repository.sessions_by_ids(db, sorted(suspects), lock=True)
    repaired = 0
    for request_id, session_id in held.items():
        row = locked.get(session_id)
        if row is None or keeps(row, request_id):
            continue  # not a suspect, or it moved on correctly since the first read
        allocation = await admission.release(db, request_id, now, reason="repaired")
        if allocation is None:
            continue
        if row.request_id == request_id:
            row.hold_id = None
        await _audit_repair(db, row, now, request_id=request_id, hold_id=allocation.hold_id)
        repaired += 1
    for hold_id, session_id in await credits.open_holds(db):
        row = locked.get(session_id)
        if row is None or owns(row, hold_id):
            continue
        try:
            await credits.release_hold(db, hold_id=hold_id, now=now)
        except credits.HoldResolved:
            continue
        await _audit_repair(db, row, now, request_id=None, hold_id=hold_id)
        repaired += 1
    return repaired


async def _audit_repair(
    db: AsyncSession,
    row: InteractiveSession,
    now: datetime,
    *,
    request_id: uuid.UUID | None,
    hold_id: uuid.UUID | None,
) -> None:
    org_id = await identity.group_org(db, row.group_id) if row.group_id else None
    await audit_log.record(
        db,
        audit_log.AuditEvent(
            action="capacity.leak_repaired",
            target_type="session",
            target_id=str(row.id),
            org_id=org_id,
            group_id=row.group_id,
            detail={
                "state": row.state,
                "request_id": str(request_id) if request_id else None,
                "hold_id": str(hold_id) if hold_id else None,
                "released": "allocation and hold" if request_id else "hold",
            },
        ),
        now=now,
    )


async def lock_waiters(db: AsyncSession, request_ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """A walk of the queue locks the sessions waiting on its requests first (see
    `admission.claim_queued`); the requests whose session another transaction holds now."""
    return await repository.lock_waiters(db, request_ids)


async def announce_started(db: AsyncSession, row: InteractiveSession, now: datetime) -> None:
    """A session that waited in the queue started: tell its owner, with the time, in a
    notification that stays unread until they open it (they may have closed the console)."""
    await _tell_owner(
        db,
        row,
        "session.started",
        now,
        title=f"Your session {row.name} is starting",
        body=f"A card was free at {now:%H:%M} UTC on {now:%a %d %b}; it left the queue.",
        data={"started_at": now.isoformat()},
    )


async def _tell_owner(
    db: AsyncSession,
    row: InteractiveSession,
    kind: str,
    now: datetime,
    *,
    title: str,
    body: str,
    data: dict[str, str] | None = None,
) -> None:
    """A notification to the session's owner about it (the console links it to the session)."""
    await notify_user(
        db,
        row.owner_id,
        kind,
        title=title,
        body=body,
        now=now,
        data={"session_id": str(row.id), **(data or {})},
    )


# ---- policy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionPolicy:
    idle_timeout_minutes: int | None
    keep_running_minutes: int | None
    max_session_minutes: int | None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def _policy_of(db: AsyncSession, row: InteractiveSession) -> SessionPolicy:
    found = await policies_of(db, [row])
    return found[row.id]


async def policies_of(
    db: AsyncSession, rows: Sequence[InteractiveSession]
) -> dict[uuid.UUID, SessionPolicy]:
    """Each session's effective idle timeout, keep-running limit and maximum length."""
    asks = list({(r.owner_id, r.group_id) for r in rows if r.group_id is not None})
    policies = await capacity.effective_for_many(db, asks)
    out: dict[uuid.UUID, SessionPolicy] = {}
    for row in rows:
        policy = policies.get((row.owner_id, row.group_id)) if row.group_id else None
        if policy is None:
            out[row.id] = SessionPolicy(None, None, None)
            continue
        out[row.id] = SessionPolicy(
            _int_or_none(policy["idle_timeout_minutes"].value),
            _int_or_none(policy["keep_running_limit_minutes"].value),
            _int_or_none(policy["max_session_minutes"].value),
        )
    return out


# ---- the system's own pauses and losses ----------------------------------------------------


async def pause_for(
    db: AsyncSession, row: InteractiveSession, now: datetime, *, why: str, code: str, title: str
) -> None:
    """Pause a session for the system's reason (idle, out of credits, too long) and tell its
    owner why."""
    await _move(db, row, "pause", now, reason=why, release_reason=code)
    await _tell_owner(db, row, f"session.paused.{code}", now, title=title, body=why)


async def _pause_all(
    db: AsyncSession, rows: Sequence[InteractiveSession], now: datetime, *, why: str, code: str
) -> int:
    """Pause those of these sessions that can be paused (their card freed, their billing
    settled) or, while they wait for a card, take them out of the queue; volumes stay."""
    paused = 0
    for row in rows:
        if "pause" in lifecycle.allowed(row.state):
            title = f"Your session {row.name} was paused"
            await pause_for(db, row, now, why=why, code=code, title=title)
            paused += 1
    return paused


async def pause_deactivated(db: AsyncSession, user_id: uuid.UUID, now: datetime) -> None:
    """A deactivated user's sessions are paused. (identity's `deactivated` hook, in the
    deactivation's own transaction.)"""
    rows = await repository.live_of_owner(db, user_id)
    await _pause_all(db, rows, now, why="Its owner's account was deactivated.", code="deactivated")


LEFT_GROUP = (
    "Its owner is no longer in the group it runs for, so it may not use that group's cards or "
    "volumes. Its volumes are kept."
)


async def pause_left_group(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID, now: datetime
) -> None:
    """The sessions a user runs for a group they left are paused. (identity's
    `membership_ended` hook, in the removal's own transaction.)"""
    rows = await repository.live_of_owner(db, user_id, group_id)
    await _pause_all(db, rows, now, why=LEFT_GROUP, code="membership")


async def pause_outside_groups(db: AsyncSession, now: datetime) -> int:
    """Pause the sessions whose owner's membership of their group has ended since they were
    started (a guest's expiry passing, which nothing announces). Returns how many."""
    pausable = [s for s in lifecycle.STATES if "pause" in lifecycle.allowed(s)]
    pairs = await repository.live_groups_of_owners(db, pausable)
    current = await identity.current_memberships_among(db, pairs, now)
    paused = 0
    for owner_id, group_id in sorted(set(pairs) - current):
        rows = await repository.live_of_owner(db, owner_id, group_id)
        paused += await _pause_all(db, rows, now, why=LEFT_GROUP, code="membership")
    return paused


# ---- notices: preemption and draining -------------------------------------------------------


_NOTICE_WHY = {
    "fair_share": "a group below its fair share is waiting for its card",
    "waited_too_long": "a request has waited longer than its policy allows",
    "priority": "a request of higher priority is waiting for its card",
    "booking": "its card is booked for another group, whose member is waiting for it",
    "booking_start": "another group's booking of its card starts then",
    "drain": "its card is being drained for maintenance",
    "xid": "its card reported a hardware error and is being drained",
}


def notice_reason(reason: str, detail: str = "") -> str:
    """Why a session was given notice, as its owner reads it."""
    why = _NOTICE_WHY.get(reason, "its card is needed")
    return f"{why}: {detail}" if detail else why


async def tell_noticed(
    db: AsyncSession, facts: Sequence[preempting.NoticeFacts], now: datetime
) -> None:
    """Sessions were given notice: their owners are told when and why, and the consoles
    showing them refresh. (capacity's `noticed` hook.)"""
    rows = await repository.sessions_by_ids(db, [f.session_id for f in facts])
    for fact in facts:
        row = rows.get(fact.session_id)
        if row is None:
            continue
        await announce(db, row)
        at = fact.deadline.strftime("%H:%M UTC")
        await _tell_owner(
            db,
            row,
            f"session.notice.{fact.kind}",
            now,
            title=f"Your session {row.name} will be paused at {at}",
            body=(
                f"It is paused then because {notice_reason(fact.reason, fact.detail)}. Its "
                "volumes are kept and it resumes by itself when a card is free; save your work "
                "before then."
            ),
        )


async def tell_withdrawn(db: AsyncSession, session_ids: Sequence[uuid.UUID], now: datetime) -> None:
    """Notices were withdrawn (the card is no longer needed): the owners are told. (capacity's
    `notice_withdrawn` hook.)"""
    rows = await repository.sessions_by_ids(db, session_ids)
    for row in rows.values():
        if row.state in lifecycle.FINAL:
            continue
        await announce(db, row)
        await _tell_owner(
            db,
            row,
            "session.notice.withdrawn",
            now,
            title=f"Your session {row.name} keeps running",
            body="The notice to pause it was withdrawn: its card is no longer needed.",
        )


async def pause_noticed(
    db: AsyncSession,
    facts: Sequence[preempting.NoticeFacts],
    now: datetime,
    settings: Settings,
) -> set[uuid.UUID]:
    """Pause the sessions whose notice ran out (their cards freed, billing stopped, volumes
    kept) and queue each again to resume by itself when a card frees. Returns those paused.
    (capacity's `notice_due` hook, under the queue's lock.)"""
    paused: set[uuid.UUID] = set()
    # Every row first, in id order, before any card is released or taken: an owner's own
    # pause locks its session before a card too.
    rows = await repository.sessions_by_ids(db, [f.session_id for f in facts], lock=True)
    for fact in sorted(facts, key=lambda f: f.session_id):
        row = rows.get(fact.session_id)
        if row is None or row.state not in lifecycle.HOLDING:
            continue
        code = "preempted" if fact.kind == "preemption" else "drained"
        why = f"Paused at the end of its notice: {notice_reason(fact.reason, fact.detail)}."
        await _move(db, row, "pause", now, reason=why, release_reason=code)
        paused.add(row.id)
        body = why + " Its volumes are kept."
        try:
            async with db.begin_nested():
                await _move(
                    db,
                    row,
                    "resume",
                    now,
                    reason="Queued to resume after its notice.",
                    settings=settings,
                )
            body += " It is queued and resumes by itself when a card is free."
        except GShareError as exc:
            body += f" It could not be queued to resume ({exc.message}); resume it yourself."
        await _tell_owner(
            db,
            row,
            f"session.paused.{code}",
            now,
            title=f"Your session {row.name} was paused",
            body=body,
        )
    return paused


async def idle_among(db: AsyncSession, session_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these sessions are idle now. (capacity's `idle_among` hook.)"""
    return await repository.idle_among(db, session_ids)


async def end_cancelled_wait(
    db: AsyncSession, request_id: uuid.UUID, now: datetime, by_owner: bool
) -> bool:
    """A queued request was cancelled from the queue: the session waiting on it stops waiting
    and stops (its volumes stay), and its owner is told. False when no session waits on it.
    (capacity's `cancelling` hook, before the request itself is locked: sessions lock a
    session before its request.)"""
    row = await repository.by_request(db, request_id)
    if row is None or row.state not in lifecycle.WAITING:
        return False
    why = (
        "Cancelled from the queue by its owner."
        if by_owner
        else "Cancelled from the queue by an administrator."
    )
    await _move(db, row, "stop", now, reason=why)
    await _tell_owner(
        db,
        row,
        "session.cancelled",
        now,
        title=f"Your session {row.name} left the queue",
        body=why + " Its volumes are kept.",
    )
    return True


async def lose(db: AsyncSession, row: InteractiveSession, now: datetime, why: str) -> None:
    await _move(db, row, "lose", now, reason=why, release_reason="lost")
    await _tell_owner(
        db, row, "session.lost", now, title=f"Your session {row.name} was lost", body=why
    )


async def fail(db: AsyncSession, row: InteractiveSession, now: datetime, why: str) -> None:
    """The session cannot run as it is (it never started): it fails, and is settled."""
    await _move(db, row, "pod_failed", now, reason=why, release_reason="failed")
    await _tell_owner(
        db,
        row,
        "session.failed",
        now,
        title=f"Your session {row.name} could not start",
        body=why + " Its volumes are kept; resume it to try again.",
    )


async def removed(
    db: AsyncSession,
    row: InteractiveSession,
    now: datetime,
    reason: str = "Stopped; its resource is removed.",
) -> None:
    """The session's resource is gone from its cluster after a stop (or the cluster has not
    confirmed it for too long: `reason` says so)."""
    await _move(db, row, "removed", now, reason=reason)


async def session_names(db: AsyncSession, ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """Names of these sessions (for the wallet's entries)."""
    return await repository.names_of(db, ids)


async def refuse_while_sessions_in(
    db: AsyncSession, kind: str, owner_id: uuid.UUID
) -> Conflict | None:
    """An organization or group whose sessions are not all stopped cannot be deleted: they are
    billed, and run, under its policy."""
    groups = (
        [owner_id]
        if kind == "group"
        else [g.id for g in await identity.groups_of_org(db, owner_id)]
    )
    live = await repository.not_stopped_in(db, groups)
    if not live:
        return None
    return Conflict(
        f"{live} session(s) of its members are not stopped; stop them first.",
        code="has_live_sessions",
    )


async def refuse_while_sessions_live(db: AsyncSession, cluster_id: uuid.UUID) -> Conflict | None:
    """A cluster that still runs sessions cannot be removed (asked with its row locked)."""
    live = await repository.live_on_cluster(db, cluster_id)
    if not live:
        return None
    return Conflict(
        f"The cluster still runs {live} session(s); stop them before removing it.",
        code="cluster_has_live_sessions",
    )


async def ended_among(db: AsyncSession, ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these sessions have ended (for the ledger check: none may keep an open hold)."""
    return await repository.ended_among(db, ids)
