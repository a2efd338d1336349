"""Shapes of the capacity API and of the operators' inventory reports. Prices and credit
amounts travel as decimal strings of credits, like every amount of the credits API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from gshare.kit.schemas import Printable, RequestModel, ResponseModel, UtcDatetime

INT_MAX = 2**31 - 1
Pool = Literal["hami-core", "mig"]
PolicyScopeKind = Literal["global", "organization", "group", "user"]
PriceText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)]
ModelName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=1, max_length=120, pattern=r"^[^\s\x00][^\n\x00]*$"
    ),
]
ProfileName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)]


# ---- the operators' inventory report -------------------------------------------------------


class ReportedCard(RequestModel):
    uuid: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    model: Annotated[str, StringConstraints(max_length=120)]
    memory_mib: int = Field(gt=0, le=INT_MAX)
    cores: int = Field(ge=0, le=INT_MAX)
    split_count: int = Field(gt=0, le=INT_MAX)
    numa: int = Field(ge=0, le=INT_MAX)
    healthy: bool


RuntimeClassName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"),
]


class ReportedNode(RequestModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    cards: list[ReportedCard] = Field(max_length=64)
    # The node's traits (an operator older than isolation levels reports none: a plain node).
    user_namespaces: bool = Field(
        default=False, description="The node's runtime runs pods in user namespaces."
    )
    runtime_classes: list[RuntimeClassName] = Field(
        default_factory=list,
        max_length=32,
        description="RuntimeClasses whose scheduling constraints the node meets.",
    )
    dedicated_label: Annotated[str, StringConstraints(max_length=63)] | None = Field(
        default=None, description="The node's `gshare.io/dedicated` label."
    )
    dedicated_tainted: bool = Field(
        default=False, description="Whether the node carries the matching NoSchedule taint."
    )


class InventoryReport(RequestModel):
    """The whole inventory of a cluster; `sequence` grows with every report the operator sends."""

    sequence: int = Field(ge=1, le=2**63 - 1)
    nodes: list[ReportedNode] = Field(max_length=5000)

    @model_validator(mode="after")
    def _each_card_once(self) -> InventoryReport:
        uuids = [card.uuid for node in self.nodes for card in node.cards]
        if len(uuids) != len(set(uuids)):
            raise ValueError("each card may be reported once")
        names = [node.name for node in self.nodes]
        if len(names) != len(set(names)):
            raise ValueError("each node may be reported once")
        return self


class InventoryAck(ResponseModel):
    applied: bool
    sequence: int


# ---- cards ---------------------------------------------------------------------------------


class OccupantOut(ResponseModel):
    request_id: uuid.UUID
    user_id: uuid.UUID
    user_email: str
    group_id: uuid.UUID
    tier: str | None
    slot: int | None = Field(description="The slot on a hami-core card, or a MIG instance's start.")
    mig_profile: str | None
    vram_mib: int
    status: Literal["live", "lost"]
    admitted_at: datetime
    notice_deadline: datetime | None = Field(
        default=None, description="When it is paused, if it has been given notice."
    )


class MigInstanceOut(ResponseModel):
    profile: str
    start: int
    occupied: bool


class CardDrainOut(ResponseModel):
    id: uuid.UUID
    scope: Literal["card", "node", "cluster"]
    source: Literal["admin", "xid"]
    reason: str
    deadline: datetime


class CardOut(ResponseModel):
    id: uuid.UUID
    uuid: str
    node: str
    model: str
    memory_mib: int
    cores: int
    split_count: int
    healthy: bool
    missing: bool
    last_seen_at: datetime
    pool: Pool
    carved_tier: str | None = Field(description="The tier a hami-core card is carved to, if any.")
    carved_slots: int | None
    free_slots: int | None = Field(description="Free slots of the carving; null while uncarved.")
    draining: bool = Field(
        description="Held for a queued request that waited past the starvation limit: it takes "
        "no new sessions until that request starts on it."
    )
    drain: CardDrainOut | None = Field(
        default=None, description="The active drain that covers the card, if any."
    )
    mig_instances: list[MigInstanceOut]
    occupants: list[OccupantOut]


class CardPage(ResponseModel):
    items: list[CardOut]


class PoolPut(RequestModel):
    pool: Pool


class MigInstanceIn(RequestModel):
    profile: ProfileName
    start: int | None = Field(default=None, ge=0, le=7, description="Left out: the first fit.")


class MigLayoutPut(RequestModel):
    instances: list[MigInstanceIn] = Field(min_length=1, max_length=7)


class MigChoicesOut(ResponseModel):
    geometry: str
    profiles: list[str]
    layouts: list[list[str]] = Field(description="Every full layout the GPU accepts.")


# ---- models and tiers ----------------------------------------------------------------------


class TierOut(ResponseModel):
    id: uuid.UUID
    model_id: uuid.UUID
    model: str
    name: str
    kind: Literal["fraction", "exclusive", "mig"]
    denominator: int | None
    mig_profile: str | None
    vram_mib: int
    compute_percent: int
    price_per_hour: str
    price_is_default: bool
    retired_at: datetime | None


class UsableTierOut(TierOut):
    free_slots: int = Field(
        description="Sessions of the tier that could start now; 0 while others wait for it."
    )
    estimated_wait_seconds: float | None = Field(
        description="About how long a new session would queue; null while a slot is free, "
        "or when no card offers the tier."
    )


class TierPage(ResponseModel):
    items: list[UsableTierOut]


class GpuModelIn(RequestModel):
    name: ModelName
    exclusive_price: PriceText = Field(description="Credits per hour for the whole card.")
    memory_mib: int | None = Field(default=None, gt=0, le=INT_MAX)
    split_count: int | None = Field(default=None, gt=0, le=1024)


class GpuModelPatch(RequestModel):
    exclusive_price: PriceText


class GpuModelOut(ResponseModel):
    id: uuid.UUID
    name: str
    memory_mib: int
    split_count: int
    exclusive_price: str
    mig_geometry: str | None
    tiers: list[TierOut]


class GpuModelPage(ResponseModel):
    items: list[GpuModelOut]


class TierIn(RequestModel):
    kind: Literal["fraction", "exclusive", "mig"]
    denominator: int | None = Field(default=None, ge=2, le=1024)
    mig_profile: ProfileName | None = None
    price_per_hour: PriceText | None = Field(
        default=None, description="Left out: the exclusive price times the tier's share."
    )


class TierPatch(RequestModel):
    price_per_hour: PriceText | None = Field(description="null: back to the default price.")


# ---- policies ------------------------------------------------------------------------------


class PolicyPut(RequestModel):
    values: dict[str, Any] = Field(
        max_length=40,
        description="The keys this scope sets; a key left out is not set here.",
    )


class PolicyOut(ResponseModel):
    scope: PolicyScopeKind
    scope_id: uuid.UUID | None
    values: dict[str, Any]
    updated_at: datetime | None


class EffectiveValueOut(ResponseModel):
    key: str
    value: Any
    scope: PolicyScopeKind | None = Field(description="Where the value came from; null: unset.")
    scope_id: uuid.UUID | None


class EffectivePolicyOut(ResponseModel):
    user_id: uuid.UUID
    group_id: uuid.UUID
    values: list[EffectiveValueOut]


# ---- admission and the queue ---------------------------------------------------------------


class AdmissionPreviewIn(RequestModel):
    group_id: uuid.UUID
    tier_id: uuid.UUID | None = Field(default=None, description="null: a CPU-only session.")
    cpu_cores: float = Field(default=1, ge=0, le=4096, allow_inf_nan=False)
    memory_mib: int = Field(default=2048, ge=0, le=2**40)


class AdmissionPreviewOut(ResponseModel):
    outcome: Literal["start", "queue", "no_capacity", "policy_denied", "insufficient_credits"]
    message: str
    price_per_hour: str
    available_credits: str
    hours_affordable: float | None = Field(description="null: free, so unlimited.")
    queue_position: int | None
    estimated_wait_seconds: float | None
    policy_key: str | None = None
    policy_scope: PolicyScopeKind | None = None


class PriorityOut(ResponseModel):
    value: float = Field(
        description="Within its organization: the waiting bonus less (user usage + group "
        "usage) / weight."
    )
    waited_seconds: float
    wait_bonus: float
    user_usage: float
    group_usage: float
    weight: float
    starving: bool
    org_value: float = Field(
        description="Of its organization's turn it takes: that turn's waiting bonus less the "
        "organization's usage / its weight. Organizations' turns are ordered by it."
    )
    org_waited_seconds: float = Field(
        description="The wait its organization's turn counts: the k-th longest of the "
        "organization's waiting requests, for its k-th turn."
    )
    org_usage: float = Field(description="Its organization's recent use: the sum of its groups'.")
    org_weight: float = Field(description="Its organization's `org_weight`.")


class AheadReasonsOut(ResponseModel):
    booking: int = Field(description="Within a booking of their group running now.")
    waited_too_long: int = Field(description="Waiting past the starvation limit.")
    priority: int = Field(
        description="A higher priority value: less recent use for their weight, or a longer "
        "wait (of their organization, for a turn of another one)."
    )
    earlier: int = Field(description="The same priority, asked for earlier.")


class AheadOut(ResponseModel):
    """What is ahead of a queued request for the same GPU model, in the dequeue's own order."""

    requests: int
    groups: int = Field(description="How many groups the requests ahead are from.")
    reasons: AheadReasonsOut = Field(
        description="How many are ahead for each reason: the first part of the order in which "
        "each comes first."
    )
    in_words: str


class StartOut(ResponseModel):
    """When a queued request will start, from a simulation of the queue run many times over
    and corrected by how recent forecasts turned out."""

    likely_at: datetime | None = Field(
        description="Half of the simulated futures start it by then (p50); null: not within "
        "the forecast's horizon of 7 days."
    )
    surely_by: datetime | None = Field(
        description="Nine in ten start it by then (p90); null: not within the horizon."
    )
    first_likely_at: datetime | None = Field(
        description="The likely start first forecast for it, to show how the forecast moved."
    )
    forecast_at: datetime = Field(description="When the forecast was last refreshed.")


class HeldForBookingOut(ResponseModel):
    """Cards of the model held for other groups' bookings as their windows start: they take
    no other session until the hold ends."""

    cards: int
    until: datetime = Field(description="When the last of these holds ends.")


class QueueItemOut(ResponseModel):
    id: uuid.UUID
    user_id: uuid.UUID
    user_email: str
    group_id: uuid.UUID
    model: str | None
    tier: str | None
    status: Literal["queued", "admitted", "cancelled", "insufficient_credits", "dropped", "refused"]
    reason: str
    enqueued_at: datetime
    decided_at: datetime | None
    position: int | None
    estimated_wait_seconds: float | None
    reserved_card_id: uuid.UUID | None
    card_freed_at: datetime | None = Field(
        default=None,
        description="A card is being freed for this request by preemption: at the latest then.",
    )
    priority: PriorityOut | None = Field(description="Shown to admins only.")
    ahead: AheadOut | None = Field(default=None, description="Why it waits (queued only).")
    waits_for: str | None = Field(
        default=None, description="What it waits for, in words (queued only)."
    )
    held_for_booking: HeldForBookingOut | None = Field(
        default=None, description="Cards of its model held for another group's booking now."
    )
    start: StartOut | None = Field(
        default=None, description="When it will start (queued only, once forecast)."
    )


class QueuePage(ResponseModel):
    items: list[QueueItemOut]


# ---- drains and notices --------------------------------------------------------------------

DrainScope = Literal["card", "node", "cluster"]
NoticeKind = Literal["preemption", "drain"]
NoticeReason = Literal[
    "fair_share", "waited_too_long", "priority", "booking", "booking_start", "drain", "xid"
]


class DrainIn(RequestModel):
    scope: DrainScope
    cluster_id: uuid.UUID
    node: Annotated[str, StringConstraints(min_length=1, max_length=253), Printable] | None = Field(
        default=None, description="The node, for a node's drain."
    )
    card_id: uuid.UUID | None = Field(default=None, description="The card, for a card's drain.")
    deadline: UtcDatetime = Field(
        description="When the sessions still on the capacity are paused; now or later, at most "
        "30 days ahead."
    )
    reason: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500), Printable
    ] = Field(description="Why, as the sessions' owners will read it.")


class DrainOut(ResponseModel):
    id: uuid.UUID
    scope: DrainScope
    cluster_id: uuid.UUID
    node: str | None
    card_id: uuid.UUID | None
    reason: str
    source: Literal["admin", "xid"]
    deadline: datetime
    status: Literal["active", "ended", "cancelled"]
    created_at: datetime
    ended_at: datetime | None
    cards: int = Field(description="The cards the drain covers.")
    sessions_left: int = Field(description="Sessions still holding a card it covers.")
    next_deadline: datetime | None = Field(
        description="The earliest deadline among those sessions' notices, if any."
    )


class DrainPage(ResponseModel):
    items: list[DrainOut]


class NoticeOut(ResponseModel):
    id: uuid.UUID
    kind: NoticeKind
    reason: NoticeReason
    session_id: uuid.UUID | None = Field(
        description="The session given notice; null for one of a group the caller does not "
        "administer."
    )
    user_id: uuid.UUID | None = Field(description="Its owner; null as `session_id` is.")
    group_id: uuid.UUID | None = Field(
        description="The session's group; null for a group of another organization than the "
        "one the card is freed for, when the caller administers only that one."
    )
    card_id: uuid.UUID | None
    request_id: uuid.UUID | None = Field(
        description="The queued request the card is freed for; null for one of a group the "
        "caller does not administer."
    )
    for_group_id: uuid.UUID | None = Field(
        description="The group the card is freed for; null for a drain, or for a group of "
        "another organization than the session's, when the caller administers only the "
        "session's."
    )
    drain_id: uuid.UUID | None
    booking_id: uuid.UUID | None = Field(
        description="The booking whose window starts at the deadline: the card is freed for it "
        "ahead of its window. Null, as `for_group_id` is, for another organization's."
    )
    noticed_at: datetime
    deadline: datetime
    status: Literal["pending", "paused", "freed", "withdrawn"]
    ended_at: datetime | None


class PreemptionCountOut(ResponseModel):
    group_id: uuid.UUID
    preempted: int = Field(description="Sessions of the group given notice for another's request.")
    preempting: int = Field(description="Sessions of other groups given notice for the group.")


class NoticePage(ResponseModel):
    items: list[NoticeOut]
    counts: list[PreemptionCountOut] = Field(
        description="Preemptions per group over the listed period."
    )


# ---- the operators' card errors report -----------------------------------------------------


class ReportedCardError(RequestModel):
    """One card's hardware trouble, as its operator read it from the DCGM exporter."""

    card_uuid: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    xid: int | None = Field(default=None, ge=1, le=INT_MAX, description="The XID, for `xid`.")
    kind: Literal["xid", "ecc_dbe", "row_remap"]
    detail: Annotated[str, StringConstraints(max_length=500), Printable] = ""
    standing: bool = Field(
        default=False,
        description="Already showing when the operator first saw the card: drained for only if "
        "the card was never drained for the same trouble.",
    )

    @model_validator(mode="after")
    def _xid_with_its_kind(self) -> ReportedCardError:
        if (self.kind == "xid") != (self.xid is not None):
            raise ValueError("an XID is given with kind `xid`, and only then")
        return self


class CardErrorReport(RequestModel):
    """Cards of the cluster with new hardware trouble: each drains itself."""

    items: list[ReportedCardError] = Field(max_length=1000)


class CardErrorAck(ResponseModel):
    drained: int = Field(description="Cards this report started draining.")


# ---- bookings ------------------------------------------------------------------------------

BookingTitle = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200), Printable
]


class BookingIn(RequestModel):
    group_id: uuid.UUID = Field(description="The group the capacity is booked for.")
    tier_id: uuid.UUID = Field(
        description="What is booked: a fraction tier's slots, whole cards (an exclusive tier) "
        "or a MIG profile's instances."
    )
    count: int = Field(ge=1, le=10_000, description="How many sessions of the tier.")
    starts_at: UtcDatetime = Field(description="The (first) window's start: now or later.")
    ends_at: UtcDatetime = Field(
        description="The (first) window's end: after its start, at most 14 days later (7 for a "
        "weekly booking)."
    )
    weekly_until: UtcDatetime | None = Field(
        default=None,
        description="Repeat the window every 7 days while its start is before this instant "
        "(at most a year after the first start); none: once.",
    )
    title: BookingTitle = Field(description="What the booking is for, as members will read it.")
    notice_minutes: int = Field(
        default=2,
        ge=0,
        le=1440,
        description="How long a session lent the booked capacity is told before it is paused "
        "for a member of the group.",
    )


class BookingEdit(RequestModel):
    """What may change before a booking starts; what is left out stays as it is."""

    count: int | None = Field(default=None, ge=1, le=10_000)
    starts_at: UtcDatetime | None = None
    ends_at: UtcDatetime | None = None
    weekly_until: UtcDatetime | None = None
    once: bool = Field(default=False, description="Drop the weekly recurrence.")
    title: BookingTitle | None = None
    notice_minutes: int | None = Field(default=None, ge=0, le=1440)


class BookingOut(ResponseModel):
    id: uuid.UUID
    group_id: uuid.UUID
    group_name: str
    tier_id: uuid.UUID
    tier_name: str
    model: str
    count: int
    starts_at: datetime
    ends_at: datetime
    weekly_until: datetime | None
    title: str
    notice_minutes: int
    status: Literal["active", "cancelled"]
    created_at: datetime
    updated_at: datetime
    cancelled_at: datetime | None
    next_window: tuple[datetime, datetime] | None = Field(
        description="The window now running or the next one; none once the last has ended."
    )
    can_manage: bool = Field(description="Whether the caller may edit or cancel it.")
    in_use: int | None = Field(
        default=None,
        description="While a window runs: how many sessions of the tier the group holds now "
        "(booked or not); none otherwise.",
    )


class BookingPage(ResponseModel):
    items: list[BookingOut]


class CalendarStep(ResponseModel):
    starts_at: datetime
    ends_at: datetime
    booked: int
    free: int


class CalendarResource(ResponseModel):
    """One thing bookings compete for: a model's whole cards, or one MIG profile's instances."""

    pool: Literal["hami-core", "mig"]
    profile: str | None
    unit: Literal["cards", "instances"]
    capacity: int
    steps: list[CalendarStep]


class CalendarOut(ResponseModel):
    model: str
    starts_at: datetime
    ends_at: datetime
    resources: list[CalendarResource]


class BookingCheckOut(ResponseModel):
    """Whether a booking would be accepted now, and why not."""

    fits: bool
    code: str | None = Field(description="The refusal's code: booking_conflict, booking_quota…")
    message: str
    at: datetime | None = Field(description="The first moment the capacity falls short.")


# ---- a group's share -----------------------------------------------------------------------


class UsePointOut(ResponseModel):
    at: datetime
    in_use: float = Field(description="Cards the group ran then.")
    usage: float = Field(description="Its decayed usage then, as the queue weighed it.")


class GroupStandingOut(ResponseModel):
    group_id: uuid.UUID
    name: str
    usage: float = Field(description="Recent use in cards, decayed: the number the queue weighs.")
    in_use: float = Field(description="Cards it runs now.")
    share: float | None = Field(
        description="Its share of its organization's share, in cards, by weight among the "
        "organization's groups running or waiting; null when it does neither."
    )
    weight: float = Field(description="Its weight within its organization (`queue_weight`).")


class OrgStandingOut(ResponseModel):
    org_id: uuid.UUID
    name: str
    usage: float = Field(description="Recent use in cards, decayed: the sum of its groups'.")
    in_use: float = Field(description="Cards its groups run now.")
    share: float = Field(
        description="Its share of the cards, by weight among the organizations running or "
        "waiting (counting it)."
    )
    weight: float = Field(description="Its weight among organizations (`org_weight`).")


class MemberUseOut(ResponseModel):
    user_id: uuid.UUID
    email: str
    usage: float = Field(description="The person's decayed usage, across their groups.")
    in_use: float = Field(description="Cards they run now in this group.")


class GroupShareOut(ResponseModel):
    """A group's GPU use against its share, and its organization's groups beside it."""

    group: GroupStandingOut
    org_id: uuid.UUID
    org_name: str
    cards: int = Field(description="GPU cards present and healthy, in every cluster.")
    org: OrgStandingOut = Field(description="Its organization among organizations.")
    active_orgs: int = Field(
        description="Organizations running or waiting (counting its own), that the cards split "
        "among."
    )
    active_groups: int = Field(
        description="Groups of its organization running or waiting (counting it), that the "
        "organization's share splits among."
    )
    half_life_seconds: float = Field(description="Usage halves over this time unless renewed.")
    history: list[UsePointOut] = Field(description="Over the last two half-lives.")
    groups: list[GroupStandingOut] = Field(description="The organization's groups, by name.")
    members: list[MemberUseOut] | None = Field(
        description="Each member's use, most first: for the group's admins only."
    )
    in_words: str


# ---- isolation levels ----------------------------------------------------------------------

NodeName = Annotated[
    str, StringConstraints(min_length=1, max_length=253, pattern=r"^[^\x00-\x1f\x7f]+$")
]


class DedicationCreate(RequestModel):
    """Dedicate a node (leave `node` out: every node of the cluster) to one organization or one
    group."""

    cluster_id: uuid.UUID
    node: NodeName | None = Field(default=None, description="The node; null: the whole cluster.")
    # Exactly one of the two (checked after the permission: 422 when both or neither).
    organization_id: uuid.UUID | None = None
    group_id: uuid.UUID | None = None


class DedicationOut(ResponseModel):
    id: uuid.UUID
    cluster_id: uuid.UUID
    node: str | None = Field(description="Null: every node of the cluster.")
    organization_id: uuid.UUID | None
    group_id: uuid.UUID | None
    tenant_name: str = Field(description="The organization's or group's name.")
    label: str = Field(
        description="The label (`gshare.io/dedicated=<this>`) and NoSchedule taint the node "
        "needs: session pods require the one and tolerate the other."
    )
    created_at: datetime


class DedicationPage(ResponseModel):
    items: list[DedicationOut]


class NodeOut(ResponseModel):
    cluster_id: uuid.UUID
    node: str
    cards: int
    usable_cards: int
    user_namespaces: bool = Field(description="The node reports it runs pods in user namespaces.")
    runtime_classes: list[str] = Field(
        description="RuntimeClasses whose scheduling constraints the node meets."
    )
    dedicated_label: str | None = Field(description="The node's `gshare.io/dedicated` label.")
    dedicated_tainted: bool
    reported_at: datetime | None = Field(description="When its operator last reported it.")
    dedication: DedicationOut | None
    ready: bool = Field(
        description="A dedicated node carries the label and taint its dedication needs, and an "
        "undedicated one carries neither."
    )


class NodePage(ResponseModel):
    items: list[NodeOut]


class PlacedOut(ResponseModel):
    cluster_id: uuid.UUID
    cluster_name: str
    node: str
    level: str
    runtime_class: str | None
    user_namespaces: bool
    dedicated: bool
    sessions: int
    last_at: datetime


class IncidentOut(ResponseModel):
    id: uuid.UUID
    session_id: uuid.UUID
    cluster_id: uuid.UUID
    group_id: uuid.UUID | None
    level: str
    reason: str
    node: str
    found_at: datetime


class OrgIsolationOut(ResponseModel):
    organization_id: uuid.UUID
    level: str = Field(description="The organization's isolation level.")
    level_set_at: Literal["default", "global", "organization"]
    group_levels: dict[str, str] = Field(description="Groups that set their own level, by id.")
    dedications: list[DedicationOut]
    placed: list[PlacedOut] = Field(description="Where its sessions ran in the last 30 days.")
    incidents: list[IncidentOut] = Field(
        description="Pods found outside their level in the last 30 days (there should be none)."
    )
    since: datetime
