"""Request and response bodies of the session, catalog and volume routes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from gshare.capacity.schemas import AheadOut, HeldForBookingOut, NoticeReason, StartOut
from gshare.kit.schemas import Printable, RequestModel, ResponseModel, UtcDatetime
from gshare.sessions import startup
from gshare.sessions.lifecycle import State
from gshare.sessions.startup import StepName
from gshare.sessions.status import Phase

BIGINT_MAX = 2**63 - 1
SessionType = Literal["vscode", "jupyterlab", "terminal"]
Name = Annotated[str, StringConstraints(strip_whitespace=True, max_length=80), Printable]
ImageName = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80), Printable
]
VolumeName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        min_length=1,
        max_length=40,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    ),
]


class StartupStepReport(RequestModel):
    """One step of a session's start, as the operator read it from the pod and its events."""

    step: StepName = Field(description="A progress step, or `warning` for a warning event.")
    at: UtcDatetime = Field(description="When it happened (a warning: its latest occurrence).")
    reason: str = Field(
        default="",
        max_length=startup.MAX_REASON,
        pattern=r"^([A-Za-z][A-Za-z0-9]*)?$",
        description="The Kubernetes reason (`FailedScheduling`, `ImagePullBackOff` …).",
    )
    message: Annotated[str, Field(max_length=startup.MAX_MESSAGE), Printable] = ""
    image_size_bytes: int | None = Field(default=None, ge=0, le=BIGINT_MAX)
    count: int = Field(default=1, ge=1, le=2**31 - 1, description="How often it happened.")


class DriftReport(RequestModel):
    """A pod the operator found outside its session's isolation level, and removed."""

    reason: Annotated[str, Field(min_length=1, max_length=500), Printable]
    node: Annotated[str, Field(max_length=253), Printable] = Field(
        default="", description="The node the pod was on; empty: not scheduled yet."
    )
    pod: Annotated[str, Field(min_length=1, max_length=64), Printable] = Field(
        description="The pod's uid."
    )
    at: UtcDatetime = Field(description="When the operator found it.")


class StatusReport(RequestModel):
    """What an operator reports about one session's resource."""

    generation: int = Field(
        ge=0, le=BIGINT_MAX, description="The resource generation this status reflects."
    )
    sequence: int = Field(
        ge=1, le=BIGINT_MAX, description="Grows with every report the operator sends."
    )
    phase: Phase
    message: str = Field(default="", max_length=1000)
    revision: int | None = Field(
        default=None,
        ge=0,
        le=BIGINT_MAX,
        description="The control plane's revision of the spec this status describes (the "
        "spec's `revision`). A status about another revision is stored but moves nothing.",
    )
    steps: list[StartupStepReport] | None = Field(
        default=None,
        max_length=startup.MAX_STEPS,
        description="How the pod of this revision is starting; merged into the steps kept for "
        "the session's latest start when `revision` is that start's. None: not reported.",
    )
    drift: DriftReport | None = Field(
        default=None,
        description="The latest pod found outside the session's isolation level (recorded as "
        "an incident once per pod and finding).",
    )


class StatusAck(ResponseModel):
    applied: bool = Field(
        description="False when the report was not newer than the stored one, or the session "
        "has ended."
    )
    sequence: int


class UtilizationSample(RequestModel):
    session_id: uuid.UUID
    gpu_util_percent: float | None = Field(default=None, ge=0, le=100, allow_inf_nan=False)
    vram_used_mib: int | None = Field(default=None, ge=0, le=2**31 - 1)
    last_kernel_seconds: float | None = Field(default=None, ge=0, le=1e9, allow_inf_nan=False)
    has_series: bool = True


class UtilizationReport(RequestModel):
    """GPU use of a cluster's sessions, as its metrics source reports it."""

    sequence: int = Field(ge=1, le=BIGINT_MAX)
    source: Literal["hami", "dcgm"]
    readable: bool = True
    error: str = Field(default="", max_length=1000)
    samples: list[UtilizationSample] = Field(default_factory=list, max_length=5000)


class UtilizationAck(ResponseModel):
    applied: bool


class UsagePointOut(ResponseModel):
    at: datetime
    gpu_util_percent: float | None = Field(description="Mean over the reports it stands for.")
    vram_used_mib: int | None = Field(description="Peak over the reports it stands for.")
    samples: int = Field(description="How many reports it stands for: older ones are thinned.")


class CostPointOut(ResponseModel):
    at: datetime
    cost: str = Field(description="Credits captured from the session's start until then.")


class SessionUsageOut(ResponseModel):
    """A session's GPU use and cost over its life, thinned with age (at most about 800 points
    of use and 250 of cost, however long it ran)."""

    session_id: uuid.UUID
    since: datetime = Field(description="When the session was created.")
    until: datetime = Field(description="When it ended, or now.")
    vram_limit_mib: int | None = Field(description="The tier's VRAM; none for a CPU session.")
    current: UsagePointOut | None = Field(
        description="The latest report while it runs; none once it is paused or has ended."
    )
    points: list[UsagePointOut]
    cost: list[CostPointOut]
    cost_total: str = Field(description="Credits captured so far.")


class SessionEntryOut(ResponseModel):
    url: str = Field(description="Open within a minute; it works once.")


class SessionCreate(RequestModel):
    name: Name = ""
    session_type: SessionType
    image_id: uuid.UUID = Field(description="An enabled catalog image of this session type.")
    group_id: uuid.UUID = Field(description="The group the session runs for (its policy).")
    tier_id: uuid.UUID | None = Field(default=None, description="None: a CPU-only session.")
    cpu_millicores: int = Field(default=1000, ge=100, le=256_000)
    memory_mib: int = Field(default=2048, ge=128, le=4_194_304)
    home_volume_id: uuid.UUID | None = Field(
        default=None, description="An existing home volume of yours; none: a new one."
    )
    home_size_gib: int | None = Field(default=None, ge=1, le=16384)
    shared_volume_ids: list[uuid.UUID] = Field(default_factory=list, max_length=8)


class MountOut(ResponseModel):
    volume_id: uuid.UUID
    name: str
    kind: Literal["home", "shared"]
    mount_path: str
    read_only: bool


class StartupStepOut(ResponseModel):
    step: StepName
    at: datetime
    reason: str
    message: str
    image_size_bytes: int | None
    count: int


class TransitionOut(ResponseModel):
    from_state: State | None
    to_state: State
    reason: str
    at: datetime


class NoticeOut(ResponseModel):
    kind: Literal["preemption", "drain"] = Field(
        description="preemption: its card is freed for a queued request, or for a booking "
        "whose window starts at the deadline; drain: its capacity is taken out of service."
    )
    reason: NoticeReason
    message: str = Field(description="Why, in words for its owner.")
    noticed_at: datetime
    deadline: datetime = Field(description="When it is paused, unless the notice is withdrawn.")


class SessionOut(ResponseModel):
    id: uuid.UUID
    name: str
    owner_id: uuid.UUID
    owner_email: str
    session_type: SessionType
    image: str
    state: State
    state_reason: str
    state_changed_at: datetime | None
    created_at: datetime
    group_id: uuid.UUID | None
    cluster_id: uuid.UUID | None
    tier_id: uuid.UUID | None
    model: str | None
    tier_name: str | None
    vram_mib: int | None
    cpu_millicores: int
    memory_mib: int
    price_per_hour: str = Field(description="Credits an hour while it holds a card.")
    cost: str = Field(description="Credits captured so far, over every allocation.")
    billing: bool = Field(description="Whether it holds a card and is being billed now.")
    queue_position: int | None = None
    estimated_wait_seconds: int | None = None
    ahead: AheadOut | None = Field(default=None, description="Why it waits (waiting only).")
    waits_for: str | None = Field(
        default=None, description="What it waits for, in words (waiting only)."
    )
    held_for_booking: HeldForBookingOut | None = Field(
        default=None, description="Cards of its model held for another group's booking now."
    )
    start: StartOut | None = Field(
        default=None, description="When it will start (waiting only, once forecast)."
    )
    gpu_util_percent: float | None
    vram_used_mib: int | None
    peak_vram_mib: int | None
    utilization_at: datetime | None
    idle_since: datetime | None
    idle_pause_at: datetime | None = Field(
        description="When it will be paused for being idle, once its owner has been warned."
    )
    keep_running_until: datetime | None
    can_keep_running: bool
    notice: NoticeOut | None = Field(
        default=None,
        description="Set while the session has been told it will be paused: when, and why.",
    )
    card_freed_at: datetime | None = Field(
        default=None,
        description="While it waits: a card is being freed for it, at the latest by then.",
    )
    actions: list[Literal["pause", "resume", "stop"]]
    can_open: bool
    volumes: list[MountOut]
    startup_requested_at: datetime | None = Field(
        default=None, description="When its latest start was asked for (created or resumed)."
    )
    startup_steps: list[StartupStepOut] = Field(
        default_factory=list,
        description="How its latest start went, as the cluster reports it: progress steps "
        "and the warnings that explain a stuck or failed start, in the order they happened.",
    )
    transitions: list[TransitionOut] | None = Field(
        default=None, description="Its state history (on the single-session read)."
    )


class SessionList(ResponseModel):
    items: list[SessionOut]


class ImageOut(ResponseModel):
    id: uuid.UUID
    session_type: SessionType
    name: str
    reference: str
    description: str
    enabled: bool


class ImageList(ResponseModel):
    items: list[ImageOut]


ImageReference = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        min_length=1,
        max_length=512,
        pattern=r"^[a-z0-9]([a-z0-9._/:@-]*[A-Za-z0-9_])?$",
    ),
]


class ImageCreate(RequestModel):
    session_type: SessionType
    name: ImageName
    reference: ImageReference
    description: str = Field(default="", max_length=2000)
    enabled: bool = True


class ImageUpdate(RequestModel):
    name: ImageName | None = None
    reference: ImageReference | None = None
    description: str | None = Field(default=None, max_length=2000)
    enabled: bool | None = None


class VolumeUser(ResponseModel):
    session_id: uuid.UUID
    name: str
    state: State


class VolumeOut(ResponseModel):
    id: uuid.UUID
    kind: Literal["home", "shared"]
    name: str
    size_gib: int
    access_mode: str
    group_id: uuid.UUID | None
    cluster_id: uuid.UUID | None
    created_at: datetime
    used_by: list[VolumeUser]
    used_by_others: int = Field(
        default=0, description="Sessions of other people using it (not named to members)."
    )


class VolumeList(ResponseModel):
    items: list[VolumeOut]
    home_total_gib: int
    storage_limit_gib: int | None = None


class SharedVolumeCreate(RequestModel):
    name: VolumeName
    size_gib: int = Field(ge=1, le=16384)
    access_mode: Literal["ReadWriteMany", "ReadOnlyMany"] = "ReadWriteMany"
