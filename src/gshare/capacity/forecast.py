"""Start forecasts: when each queued request will likely start, and by when almost surely.
Pure: no I/O.

The queue is simulated forward from the admission snapshot, many times over ("draws"). In each
draw every running session ends after a time drawn from the observed lengths of finished
sessions of its tier (its owner's own, where the owner has enough of them), conditioned on how
long it has already run; a session under a preemption or drain notice ends by its deadline at
the latest. Each time something ends, the queue's turn is played as `queue.dequeue` plays it:
the waiting requests in the queue's order (`queue.priorities`: bookings first, then requests
past the starvation limit, then priority), each placed where placement would put it (the
fullest card carved to its tier, else an empty card, or a free instance of its MIG profile), a
request past the starvation limit that does not fit holding a card for itself, and cards held
for a booking's members (until the hold ends) or a starving request taking no one else. A
request that starts is given a length drawn the same way. Across the draws each request's start
times give the p50 ("likely around") and the p90 ("almost surely before").

What the forecast cannot know, and the benchmark measures the cost of: requests that have not
arrived yet (a later request of a group with less recent use goes ahead), bookings whose
window has not started, and the slow change of usage while the forecast runs forward (the order
is the queue's order now; only the starvation limit, which moves requests at known times, is
played out). That shows as a steady bias in how recent forecasts turned out, which
`correction` learns and `corrected` applies.

For speed (a refresh over 10,000 busy cards stays near 200 ms): cards are numbered in id order
and their state kept in lists copied per draw; ends are integer heap keys; a room index per
tier answers where the next session of a tier goes; a large snapshot gets fewer draws.

Invariants: a request that fits now is forecast to start now; p50 <= p90; every draw places no
more than the cards hold; the same inputs and seed give the same forecast.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import heapq
import math
import random
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gshare.capacity.isolation import PLAIN_NODE, NodeTraits, admits
from gshare.capacity.placement import HAMI_CORE, CapacitySnapshot, CardSnapshot, slot_limit
from gshare.capacity.queue import FairShareSettings, QueuedRequest, Usage, priorities

# Draws per forecast: the p90 of 24 draws lies between the 21st and the 22nd start time.
DRAWS = 24
# A large snapshot gets fewer draws, so that a refresh costs about the same at any size: a
# draw's work grows with the sessions and waiting requests it plays out, and over thousands of
# sessions the draws differ little (what is left of the spread, the correction learns).
DRAW_WORK = 170_000
MIN_DRAWS = 3
# How far forward a draw is played; a request not started by then is "beyond the horizon".
HORIZON = timedelta(days=7)
# Finished sessions per tier the forecast learns lengths from.
RECENT_LENGTHS = 200
# The owner's own lengths are used once they have this many of the tier.
OWN_HISTORY = 5
# With no history of a tier at all, sessions are taken to last this long on average.
DEFAULT_LENGTH = timedelta(hours=1)


@dataclass(frozen=True)
class RunningSession:
    """A session holding a card (or a MIG instance) now."""

    card_id: uuid.UUID
    tier: str  # the placement tier key, as `PlacementRequest.tier`
    user_id: uuid.UUID
    started_at: datetime
    mig_profile: str | None = None
    # Under a preemption or drain notice: paused at this time at the latest.
    ends_by: datetime | None = None


@dataclass(frozen=True)
class History:
    """Lengths, in seconds, of recently finished sessions: per tier, and per (owner, tier)."""

    by_tier: Mapping[str, Sequence[float]] = field(default_factory=dict)
    by_owner: Mapping[tuple[uuid.UUID, str], Sequence[float]] = field(default_factory=dict)

    def lengths(self, user_id: uuid.UUID, tier: str) -> Sequence[float]:
        own = self.by_owner.get((user_id, tier), ())
        return own if len(own) >= OWN_HISTORY else self.by_tier.get(tier, ())


@dataclass(frozen=True)
class Estimate:
    """When a request will likely start (p50) and almost surely have started by (p90); None:
    not within the horizon in that share of the draws."""

    likely: datetime | None
    surely: datetime | None


@dataclass(frozen=True)
class ForecastSettings:
    draws: int = DRAWS
    horizon: timedelta = HORIZON
    # The queue's interval: a freed card is taken at the queue's next turn.
    tick: timedelta = timedelta(seconds=15)
    seed: int = 0


def forecast(
    snapshot: CapacitySnapshot,
    running: Sequence[RunningSession],
    queued: Sequence[QueuedRequest],
    usage: Usage,
    now: datetime,
    history: History,
    fair: FairShareSettings = FairShareSettings(),
    settings: ForecastSettings = ForecastSettings(),
) -> dict[uuid.UUID, Estimate]:
    """Each queued request's `Estimate` (see the module's docstring)."""
    if not queued:
        return {}
    with _no_cycle_collection():
        return _estimates(_Plan(snapshot, running, queued, usage, now, history, fair, settings))


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The draws make and drop many small objects, none of them cyclic: the cycle collector
    would only walk the whole heap over and over. Reference counting still frees them."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _estimates(plan: _Plan) -> dict[uuid.UUID, Estimate]:
    settings = plan.settings
    rnd = random.Random(settings.seed)  # noqa: S311 (a simulation, not a secret)
    template = _State(plan)
    starts: list[list[float]] = [[] for _ in plan.waiters]
    for _ in range(draws_for(len(plan.running) + 5 * len(plan.waiters), settings.draws)):
        for n, started in enumerate(_Draw(plan, template, rnd).run()):
            starts[n].append(started)
    out = {}
    for w, times in zip(plan.waiters, starts, strict=True):
        times.sort()
        out[w.request.id] = Estimate(plan.at(_quantile(times, 0.5)), plan.at(_quantile(times, 0.9)))
    return out


def draws_for(work: int, most: int = DRAWS) -> int:
    """How many draws a forecast runs: `most`, or fewer (at least `MIN_DRAWS`) when a draw
    plays out more than `DRAW_WORK / most` sessions and requests (a waiting request weighs
    five: it is placed, and ends, within the draw)."""
    return max(min(most, DRAW_WORK // max(work, 1)), min(MIN_DRAWS, most))


@dataclass(frozen=True)
class Outcome:
    """A request that started: the forecast's raw p50 and p90 waits when it was queued, and
    how long it waited; in seconds."""

    likely: float
    surely: float
    waited: float


# Outcomes needed before the forecast corrects itself, and how many recent ones it learns from.
MIN_OUTCOMES = 20
RECENT_OUTCOMES = 200


@dataclass(frozen=True)
class Correction:
    """How far off the raw forecast has been: the median of waited / p50 and the conformal
    0.9-quantile of waited / p90 over recent outcomes (each with one queue interval added on
    both sides, so that "starts now" counts). 1.0: no correction."""

    likely: float = 1.0
    surely: float = 1.0


def correction(outcomes: Sequence[Outcome], tick: timedelta) -> Correction:
    """What the simulation cannot know (requests not arrived yet that go ahead, bookings not
    started, usage moving) shows as a steady bias in its recent outcomes; this learns it. With
    n outcomes, the p90's factor is the ceil(0.9 (n + 1))-th smallest ratio, so that a new
    request is covered with probability at least 0.9 when outcomes are exchangeable."""
    recent = list(outcomes)[-RECENT_OUTCOMES:]
    if len(recent) < MIN_OUTCOMES:
        return Correction()
    pad = max(tick.total_seconds(), 1.0)
    likely = sorted((o.waited + pad) / (o.likely + pad) for o in recent if math.isfinite(o.likely))
    surely = sorted((o.waited + pad) / (o.surely + pad) for o in recent if math.isfinite(o.surely))
    if not likely or not surely:
        return Correction()
    rank = min(math.ceil(0.9 * (len(surely) + 1)), len(surely)) - 1
    return Correction(_quantile(likely, 0.5), surely[rank])


def corrected(
    estimates: Mapping[uuid.UUID, Estimate], fix: Correction, now: datetime, tick: timedelta
) -> dict[uuid.UUID, Estimate]:
    """The estimates with `fix` applied to their waits; a start "now" stays now."""
    pad = max(tick.total_seconds(), 1.0)

    def scaled(at: datetime | None, factor: float) -> datetime | None:
        if at is None:
            return None
        wait = (at - now).total_seconds()
        if wait <= 0:
            return at
        return now + timedelta(seconds=max((wait + pad) * factor - pad, 0.0))

    out = {}
    for request_id, e in estimates.items():
        likely, surely = scaled(e.likely, fix.likely), scaled(e.surely, fix.surely)
        if likely is not None and surely is not None and surely < likely:
            surely = likely
        out[request_id] = Estimate(likely, surely)
    return out


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated between the nearest two."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    if math.isinf(ordered[high]):
        return ordered[high] if position > low else ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# A moment after: the first queue turn after a request's starvation limit is passed.
_AFTER = 1e-6

# ---- the plan: what every draw starts from ----------------------------------------------------

_Key = tuple[bool, bool, int]  # (not booked, not starving, rank by priority): smaller goes first


@dataclass
class _Waiter:
    n: int
    request: QueuedRequest
    booked: bool
    rank: int
    starves_at: float  # seconds from now
    lengths: Sequence[float]


class _Plan:
    """The snapshot turned into times in seconds from now, pools of cards and ordered waiters,
    computed once for all draws."""

    def __init__(
        self,
        snapshot: CapacitySnapshot,
        running: Sequence[RunningSession],
        queued: Sequence[QueuedRequest],
        usage: Usage,
        now: datetime,
        history: History,
        fair: FairShareSettings,
        settings: ForecastSettings,
    ) -> None:
        self.now = now
        self.settings = settings
        self.horizon = settings.horizon.total_seconds()
        self.tick = max(settings.tick.total_seconds(), 1.0)
        self.max_reserved = fair.max_reserved_cards
        self.default = [DEFAULT_LENGTH.total_seconds()]
        # Cards are numbered: the draws index them by number, which hashes far faster.
        # Only cards some waiting request could use matter, and only the sessions on them. In
        # the order of their ids, so that the lowest number is the card placement prefers.
        wanted: dict[tuple[str, bool], set[uuid.UUID | None]] = {}
        for q in queued:
            r = q.request
            wanted.setdefault((r.model, r.kind == "mig"), set()).add(r.cluster_id)
        self.cards = sorted(
            (c for c in snapshot.cards if c.usable and _wanted(c, wanted)), key=lambda c: c.id.int
        )
        numbers = {c.id.int: n for n, c in enumerate(self.cards)}
        self.reserved = {
            numbers[card.int]: req for card, req in snapshot.reserved.items() if card.int in numbers
        }
        self.booked = dict(snapshot.booked)
        self.specs = {q.request.tier: q.request for q in queued}
        # Sessions of a tier a card of a shape (split count, memory) takes: see `limit_of`.
        self.limits: dict[tuple[int, int, str | None], int] = {}
        limit = fair.starvation_limit.total_seconds()
        order = priorities(queued, usage, now, fair)
        by_id = {q.id: q for q in queued}
        # Sorted length tables, one per (owner, tier) asked for.
        tables: dict[tuple[int, str], list[float]] = {}
        sorted_once: dict[int, list[float]] = {}  # by the id of the lengths given: many share one

        def table_of(user_id: uuid.UUID, tier: str) -> list[float]:
            found = tables.get((user_id.int, tier))
            if found is None:
                given = history.lengths(user_id, tier) or self.default
                found = sorted_once.get(id(given))
                if found is None:
                    found = sorted_once[id(given)] = sorted(given)
                tables[(user_id.int, tier)] = found
            return found

        self.waiters = []
        for rank, p in enumerate(order):
            q = by_id[p.request_id]
            starves = (q.enqueued_at - now).total_seconds() + limit
            lengths = table_of(q.user_id, q.request.tier)
            self.waiters.append(_Waiter(rank, q, q.booked, rank, starves, lengths))
        # Cards held for a booking take anyone's sessions once the hold ends.
        self.hold_ends = sorted(
            ((until - now).total_seconds(), numbers[card.int])
            for card, until in snapshot.booked_until.items()
            if card.int in numbers and card in snapshot.booked
        )
        # Turns that come without any session ending: a request starts to starve, a hold ends.
        self.event_turns = sorted(
            {self.turn(w.starves_at + _AFTER) for w in self.waiters if w.starves_at >= 0}
            | {self.turn(max(end, 0.0)) for end, _ in self.hold_ends}
        )
        self.to_starve = sorted((w.starves_at, w.n) for w in self.waiters if w.starves_at >= 0)
        # Each running session on a card that matters: its card's number and MIG profile
        # (`running`); its length table, where the lengths beyond what it has run start in it
        # and how many there are, how long it has run, and its notice's deadline.
        # Most sessions have no deadline and lengths beyond what they ran (`plain`: number,
        # table, first, span, elapsed, in milliseconds); the others are drawn one by one
        # (`special`: number -> table, first, span, elapsed, deadline, in seconds).
        self.running: list[tuple[int, str | None]] = []
        self.plain: list[tuple[int, list[int], int, int, int]] = []
        self.special: dict[int, tuple[Sequence[float], int, int, float, float]] = {}
        now_ms = int(now.timestamp() * 1000)
        right, number_of = bisect.bisect_right, numbers.get
        add_running, add_plain = self.running.append, self.plain.append
        # Per (owner, tier): the table, and the same in whole milliseconds for `plain`.
        in_ms: dict[tuple[int, str], tuple[list[float], list[int]]] = {}
        ms_of: dict[int, list[int]] = {}  # by the id of the table: many share one
        n = 0
        for s in running:
            card = number_of(s.card_id.int)
            if card is None:
                continue
            key = (s.user_id.int, s.tier)
            pair = in_ms.get(key)
            if pair is None:
                table = table_of(s.user_id, s.tier)
                ms = ms_of.get(id(table))
                if ms is None:
                    ms = ms_of[id(table)] = [int(x * 1000) for x in table]
                pair = in_ms[key] = (table, ms)
            table, ms = pair
            elapsed_ms = now_ms - int(s.started_at.timestamp() * 1000)
            if elapsed_ms < 0:
                elapsed_ms = 0
            add_running((card, s.mig_profile))
            if s.ends_by is None:
                first = right(ms, elapsed_ms)
                if first < len(ms):
                    add_plain((n, ms, first, len(ms) - first, elapsed_ms))
                    n += 1
                    continue
            elapsed = elapsed_ms / 1000
            first = right(table, elapsed)
            ends_by = math.inf if s.ends_by is None else s.ends_by.timestamp() - now_ms / 1000
            self.special[n] = (table, first, len(table) - first, elapsed, max(ends_by, 0.0))
            n += 1

    def at(self, seconds: float) -> datetime | None:
        return None if math.isinf(seconds) else self.now + timedelta(seconds=seconds)

    def turn(self, seconds: float) -> float:
        """The queue's first turn at or after `seconds`."""
        return math.ceil(seconds / self.tick - 1e-9) * self.tick


def _wanted(card: CardSnapshot, wanted: dict[tuple[str, bool], set[uuid.UUID | None]]) -> bool:
    clusters = wanted.get((card.model, card.pool != HAMI_CORE))
    return clusters is not None and (None in clusters or card.cluster_id in clusters)


# ---- one draw ---------------------------------------------------------------------------------

_GENERAL = "general"
# Model, cluster (its id as an int: hashed fast), pool kind, who may use it.
# (model, cluster, pool, holder, node traits): cards that serve the same waiters alike.
_PoolKey = tuple[str, int, str, object, NodeTraits]


class _Pool:
    """Cards of one model and cluster that the same requests may use: the general ones, or
    those held for one booking or one starving request; and the waiters that may use them."""

    def __init__(self) -> None:
        self.empty: list[int] = []  # a heap of card numbers; stale entries skipped when met
        # (tier, sessions on it) -> the hami-core cards carved so: where the fullest card with
        # room for a tier is found, and the card a starving request holds.
        self.at: dict[tuple[str | None, int], set[int]] = {}
        self.room: dict[str | None, set[int]] = {}  # tier -> its cards with room for one more
        # The most sessions of each waited-for tier a card of the pool takes; whether every
        # card of the pool takes the same number.
        self.limits: dict[str, int] = {}
        self.uniform = True
        self.instances: dict[str, int] = {}  # free MIG instances per profile
        self.mig_card: int | None = None  # one of its MIG cards: where an instance frees
        self.by_tier: dict[str, list[tuple[_Key, int]]] = {}  # waiters, a heap per tier
        self.any_tier: list[tuple[_Key, int]] = []  # hami-core waiters, for empty cards

    def copy(self) -> _Pool:
        out = _Pool()
        out.empty = list(self.empty)
        out.at = {k: set(c) for k, c in self.at.items()}
        out.room = {k: set(c) for k, c in self.room.items()}
        out.limits = self.limits
        out.uniform = self.uniform
        out.instances = dict(self.instances)
        out.mig_card = self.mig_card
        out.by_tier = {t: list(h) for t, h in self.by_tier.items()}
        out.any_tier = list(self.any_tier)
        return out


_NONE: set[int] = set()


class _State:
    """Cards and pools as one draw changes them; a draw starts from a copy of the plan's.
    Each card's state is kept in lists indexed by its number (copied whole per draw, which is
    far cheaper than an object per card): its pool, the tier it is carved to, its sessions
    and how many of its tier's sessions it takes."""

    def __init__(self, plan: _Plan, template: _State | None = None) -> None:
        self.plan = plan
        # As the queue says: starving once it has waited longer than the limit, not at it.
        self.starving = [w.starves_at < 0 for w in plan.waiters]
        self.started = [math.inf] * len(plan.waiters)
        self.reservations: dict[int, int] = {}  # waiter -> the card held for it
        if template is None:
            count = len(plan.cards)
            self.pools: dict[_PoolKey, _Pool] = {}
            self.pool: list[_PoolKey] = [("", 0, "", None, PLAIN_NODE)] * count
            self.tier: list[str | None] = [None] * count
            self.used: list[int] = [0] * count
            self.limit: list[int] = [0] * count
            self._build()
        else:
            self.pools = {k: p.copy() for k, p in template.pools.items()}
            self.pool, self.tier = list(template.pool), list(template.tier)
            self.used, self.limit = list(template.used), list(template.limit)
            self.reservations = dict(template.reservations)

    def pool_key(self, card: CardSnapshot, holder: object = None) -> _PoolKey:
        if holder is None:
            booking = self.plan.booked.get(card.id) if self.plan.booked else None
            holder = ("booking", booking.int) if booking is not None else _GENERAL
        key = (card.model, card.cluster_id.int, card.pool, holder, card.traits)
        if key not in self.pools:
            pool = self.pools[key] = _Pool()
            if isinstance(holder, tuple) and holder[0] == "request":
                self.enter(pool, self.plan.waiters[holder[1]])  # for it alone
                pool.limits = self._limits([card])
            else:
                pool.limits = self._limits([card])  # the template sets its members' own
                for w in self.plan.waiters:
                    if self.may_use(w, key):
                        self.enter(pool, w)
        return key

    def _limits(self, cards: Sequence[CardSnapshot]) -> dict[str, int]:
        shapes = {(c.split_count, c.memory_mib): c for c in cards}.values()
        return {
            tier: max((slot_limit(c, spec) for c in shapes), default=0)
            for tier, spec in self.plan.specs.items()
        }

    def may_use(self, w: _Waiter, key: _PoolKey) -> bool:
        r = w.request.request
        model, cluster, kind, holder, traits = key
        if r.model != model or (r.cluster_id is not None and r.cluster_id.int != cluster):
            return False
        if not admits(traits, r.isolation):
            return False
        if (kind == HAMI_CORE) == (r.kind == "mig"):
            return False
        booking = ("booking", r.booking_id.int) if r.booking_id is not None else None
        return holder in (_GENERAL, booking, ("request", w.n))

    def key(self, w: _Waiter) -> _Key:
        return (not w.booked, not self.starving[w.n], w.rank)

    def enter(self, pool: _Pool, w: _Waiter) -> None:
        entry = (self.key(w), w.n)
        heapq.heappush(pool.by_tier.setdefault(w.request.request.tier, []), entry)
        if w.request.request.kind != "mig":
            heapq.heappush(pool.any_tier, entry)

    def _build(self) -> None:
        plan = self.plan
        members: dict[_PoolKey, list[CardSnapshot]] = {}
        for n, card in enumerate(plan.cards):
            key = self.pool_key(card)
            members.setdefault(key, []).append(card)
            self.pool[n] = key
            if card.pool == HAMI_CORE:
                tier = card.carved_tier if card.allocated_slots else None
                self.tier[n], self.used[n] = tier, len(card.allocated_slots)
                self.limit[n] = self.limit_of(card, tier)
                self.attach(n)
            else:
                pool = self.pools[key]
                pool.mig_card = n if pool.mig_card is None else pool.mig_card
                for i in card.mig_instances:
                    if not i.occupied:
                        pool.instances[i.profile] = pool.instances.get(i.profile, 0) + 1
        for key, cards in members.items():
            self.pools[key].limits = self._limits(cards)
            self.pools[key].uniform = len({(c.split_count, c.memory_mib) for c in cards}) == 1
        for card_id, request_id in plan.reserved.items():
            holder = next((w for w in plan.waiters if w.request.id == request_id), None)
            if holder is not None and plan.cards[card_id].pool == HAMI_CORE:
                self.hold(card_id, holder)

    def limit_of(self, card: CardSnapshot, tier: str | None) -> int:
        """How many sessions of `tier` the card takes; 0 for a tier no one waits for (its free
        slots serve no one, only its emptying does). Cards of one shape answer alike."""
        key = (card.split_count, card.memory_mib, tier)
        found = self.plan.limits.get(key)
        if found is None:
            spec = self.plan.specs.get(tier) if tier is not None else None
            found = self.plan.limits[key] = 0 if spec is None else slot_limit(card, spec)
        return found

    # Every change to a hami-core card is: detach, change, attach.

    def detach(self, n: int) -> None:
        if self.used[n]:
            pool = self.pools[self.pool[n]]
            pool.at.get((self.tier[n], self.used[n]), _NONE).discard(n)
            pool.room.get(self.tier[n], _NONE).discard(n)

    def attach(self, n: int) -> None:
        pool = self.pools[self.pool[n]]
        if self.used[n] <= 0:
            self.used[n], self.tier[n], self.limit[n] = 0, None, 0
            heapq.heappush(pool.empty, n)
            return
        key = (self.tier[n], self.used[n])
        cards = pool.at.get(key)
        if cards is None:
            pool.at[key] = {n}
        else:
            cards.add(n)
        if self.used[n] < self.limit[n]:
            pool.room.setdefault(self.tier[n], set()).add(n)

    def with_room(self, key: _PoolKey, tier: str) -> int | None:
        """The fullest card of the pool carved to `tier` with room for one more session."""
        pool = self.pools[key]
        if not pool.room.get(tier):
            return None
        for used in range(pool.limits.get(tier, 0) - 1, 0, -1):
            cards = pool.at.get((tier, used))
            if not cards:
                continue
            if pool.uniform:  # every card of the pool has room at this count
                return min(cards)  # the lowest id, as placement breaks ties
            found = [c for c in cards if self.limit[c] > used]
            if found:
                return min(found)
        return None

    def release(self, card_id: int, profile: str | None) -> None:
        """A session on the card ended: detach, one session fewer, attach, written out (it runs
        once per session ending, the forecast's most frequent step)."""
        pool = self.pools[self.pool[card_id]]
        if profile is not None:
            pool.instances[profile] = pool.instances.get(profile, 0) + 1
            return
        at, used, tier = pool.at, self.used[card_id], self.tier[card_id]
        if used:
            at.get((tier, used), _NONE).discard(card_id)
        used -= 1
        if used <= 0:
            pool.room.get(tier, _NONE).discard(card_id)
            self.used[card_id], self.tier[card_id], self.limit[card_id] = 0, None, 0
            heapq.heappush(pool.empty, card_id)
            return
        self.used[card_id] = used
        cards = at.get((tier, used))
        if cards is None:
            at[(tier, used)] = {card_id}
        else:
            cards.add(card_id)
        if used < self.limit[card_id]:  # room now, if not before
            room = pool.room.get(tier)
            if room is None:
                pool.room[tier] = {card_id}
            else:
                room.add(card_id)

    def hold(self, card_id: int, w: _Waiter) -> None:
        """Hold a card for a starving request: it takes no one else's session from now."""
        self.detach(card_id)
        self.pool[card_id] = self.pool_key(self.plan.cards[card_id], ("request", w.n))
        self.attach(card_id)
        self.reservations[w.n] = card_id

    def unbook(self, card_id: int) -> None:
        """The card's hold for a booking ended: it takes anyone's sessions."""
        key = self.pool[card_id]
        if not (isinstance(key[3], tuple) and key[3][0] == "booking"):
            return  # held for a starving request meanwhile: that hold goes on
        self.detach(card_id)
        self.pool[card_id] = self.pool_key(self.plan.cards[card_id], _GENERAL)
        self.attach(card_id)

    def unhold(self, w: _Waiter) -> None:
        card_id = self.reservations.pop(w.n, None)
        if card_id is None:
            return
        self.detach(card_id)
        del self.pools[self.pool[card_id]]  # held for this request alone, which waits no more
        self.pool[card_id] = self.pool_key(self.plan.cards[card_id])
        self.attach(card_id)


# An end is a heap key: its time in whole milliseconds, then which session ends (a running
# one's index, or past those a session the draw started). Ints order far faster than tuples.
_WHICH_BITS = 24
_WHICH = (1 << _WHICH_BITS) - 1


def _key_of(seconds: float, which: int) -> int:
    assert which <= _WHICH, "too many sessions for one forecast"
    return (int(max(seconds, 0.0) * 1000) << _WHICH_BITS) | which


def _at_of(key: int) -> float:
    return (key >> _WHICH_BITS) / 1000


class _Draw:
    def __init__(self, plan: _Plan, template: _State, rnd: random.Random) -> None:
        self.plan = plan
        self.rnd = rnd
        self.s = _State(plan, template)
        self.waiting = len(plan.waiters)
        # Waiters by when they start to starve, and the starving ones by rank (started ones are
        # dropped from its front when met).
        self._next_to_starve = 0
        self._next_hold = 0
        self._starving_ranks = [w.n for w in plan.waiters if w.starves_at < 0]
        # (when, which): `which` below the running sessions' count is one of them; above, a
        # session the draw started (`_extra`).
        self._extra: list[tuple[int, str | None]] = []
        self.ends: list[int] = self._draw_ends()

    def _draw_ends(self) -> list[int]:
        """When each running session ends in this draw, as heap keys (see `_key_of`)."""
        plan, rnd = self.plan, self.rnd.random
        ends = [
            ((table[first + int(rnd() * span)] - elapsed) << _WHICH_BITS) | n
            for n, table, first, span, elapsed in plan.plain
        ]
        for n, (table, first, span, elapsed, ends_by) in plan.special.items():
            if span:
                left = table[first + int(rnd() * span)] - elapsed
            else:  # longer than any seen: as long again, on average
                left = max(elapsed, table[-1]) * self.rnd.expovariate(1.0)
            ends.append(_key_of(min(left, ends_by), n))
        heapq.heapify(ends)
        return ends

    def _push_end(self, at: float, card_id: int, profile: str | None) -> None:
        self._extra.append((card_id, profile))
        heapq.heappush(self.ends, _key_of(at, len(self.plan.running) + len(self._extra) - 1))

    # -- the queue's turn --

    def _head(self, heap: list[tuple[_Key, int]]) -> tuple[_Key, int] | None:
        started, waiters, key = self.s.started, self.plan.waiters, self.s.key
        while heap:
            k, n = heap[0]
            if started[n] != math.inf or k != key(waiters[n]):
                heapq.heappop(heap)
                continue
            return heap[0]
        return None

    def _empty_card(self, pool: _Pool, key: _PoolKey, w: _Waiter) -> int | None:
        while pool.empty:
            card_id = pool.empty[0]
            if self.s.used[card_id] or self.s.pool[card_id] != key:
                heapq.heappop(pool.empty)
                continue
            card = self.plan.cards[card_id]
            return card_id if self.s.limit_of(card, w.request.request.tier) > 0 else None
        return None

    def _best(self) -> tuple[_Key, int, _PoolKey, int | None] | None:
        """The first waiter, in the queue's order, that something free now fits; the pool,
        and the card (None: a MIG instance of the pool)."""
        best: tuple[_Key, int, _PoolKey, int | None] | None = None
        waiters = self.plan.waiters
        for key, pool in self.s.pools.items():
            for tier, heap in pool.by_tier.items():
                if not pool.room.get(tier):
                    continue  # no card of the tier has room (an exclusive or MIG tier never)
                head = self._head(heap)
                if head is None or (best is not None and head[0] >= best[0]):
                    continue
                card = self.s.with_room(key, tier)
                if card is not None:
                    best = (head[0], head[1], key, card)
            for profile, free in pool.instances.items():
                if free <= 0:
                    continue
                for heap in pool.by_tier.values():
                    head = self._head(heap)
                    if head is None or waiters[head[1]].request.request.mig_profile != profile:
                        continue
                    if best is None or head[0] < best[0]:
                        best = (head[0], head[1], key, None)
            if pool.empty and (head := self._head(pool.any_tier)):
                if best is not None and head[0] >= best[0]:
                    continue
                card = self._empty_card(pool, key, waiters[head[1]])
                if card is not None:
                    best = (head[0], head[1], key, card)
        return best

    def _place(self, w: _Waiter, key: _PoolKey, card: int | None, at: float) -> None:
        r = w.request.request
        pool = self.s.pools[key]
        if card is None:  # a MIG instance
            pool.instances[r.mig_profile or ""] -= 1
            assert pool.mig_card is not None
            card_id, profile = pool.mig_card, r.mig_profile
        else:
            card_id, profile = card, None
            # Room on a carved card goes first, as placement fills the fullest card first.
            if r.kind == "fraction":
                fuller = self.s.with_room(key, r.tier)
                card_id = card if fuller is None else fuller
            s = self.s
            s.detach(card_id)
            if s.used[card_id] == 0:
                s.tier[card_id] = r.tier
                s.limit[card_id] = s.limit_of(self.plan.cards[card_id], r.tier)
            s.used[card_id] += 1
            s.attach(card_id)
        self.s.started[w.n] = at
        self.waiting -= 1
        self.s.unhold(w)
        lengths = w.lengths
        self._push_end(at + lengths[int(self.rnd.random() * len(lengths))], card_id, profile)

    def _first_starving(self) -> _Waiter | None:
        """The first starving request in the queue's order that holds no card yet."""
        started = self.s.started
        ranks = self._starving_ranks
        while ranks and started[ranks[0]] != math.inf:
            ranks.pop(0)
        for n in ranks:
            if started[n] == math.inf and n not in self.s.reservations:
                return self.plan.waiters[n]
        return None

    def _card_to_hold(self, w: _Waiter) -> int | None:
        """As `queue._card_to_reserve`: the fullest card carved to a fraction's tier, else the
        emptiest card."""
        r = w.request.request
        if r.kind == "mig":
            return None  # an instance frees as its session ends; nothing to hold
        pools = [
            pool
            for key, pool in self.s.pools.items()
            if key[3] == _GENERAL and self.s.may_use(w, key)
        ]
        buckets = [
            (used, tier, cards) for p in pools for (tier, used), cards in p.at.items() if cards
        ]
        if r.kind == "fraction":
            same = [(used, cards) for used, tier, cards in buckets if tier == r.tier]
            if same:  # the fullest, lowest id first
                most = max(used for used, _ in same)
                return min(min(cards) for used, cards in same if used == most)
        if not buckets:
            return None
        least = min(used for used, _, _ in buckets)  # the emptiest, lowest id first
        return min(min(cards) for used, _, cards in buckets if used == least)

    def _turn(self, at: float) -> None:
        plan, s = self.plan, self.s
        while self._next_hold < len(plan.hold_ends) and plan.hold_ends[self._next_hold][0] <= at:
            s.unbook(plan.hold_ends[self._next_hold][1])
            self._next_hold += 1
        to_starve = plan.to_starve
        while self._next_to_starve < len(to_starve) and to_starve[self._next_to_starve][0] < at:
            w = plan.waiters[to_starve[self._next_to_starve][1]]
            self._next_to_starve += 1
            if s.started[w.n] != math.inf:
                continue
            s.starving[w.n] = True
            bisect.insort(self._starving_ranks, w.n)
            for key, pool in s.pools.items():
                if s.may_use(w, key):
                    s.enter(pool, w)
        # As `dequeue` walks: in the queue's order, each request placed where it fits; the
        # first starving one that nothing fits holds a card before anyone after it is placed.
        while True:
            best = self._best()
            if len(s.reservations) < plan.max_reserved:
                starving = self._first_starving()
                if starving is not None and (best is None or s.key(starving) < best[0]):
                    card_id = self._card_to_hold(starving)
                    if card_id is not None:
                        s.hold(card_id, starving)
                        continue
            if best is None:
                break
            _, n, key, card = best
            self._place(plan.waiters[n], key, card, at)

    def run(self) -> list[float]:
        plan = self.plan
        event_turns = plan.event_turns
        next_event = 0
        at = 0.0
        while at <= plan.horizon:
            self._turn(at)
            if not self.waiting:
                break
            # The next turn: when something ends, a request starts to starve, or a hold ends.
            upcoming = math.inf
            if self.ends:
                upcoming = plan.turn(_at_of(self.ends[0]))
            while next_event < len(event_turns) and event_turns[next_event] <= at:
                next_event += 1
            if next_event < len(event_turns):
                upcoming = min(upcoming, event_turns[next_event])
            if math.isinf(upcoming):
                break
            at = max(upcoming, at + plan.tick)
            # Every session ended by this turn leaves its card (`_end`, inlined: the hot loop).
            ends, release, extra = self.ends, self.s.release, self._extra
            running, first_extra = plan.running, len(plan.running)
            limit = (int(at * 1000) + 1) << _WHICH_BITS
            while ends and ends[0] < limit:
                which = heapq.heappop(ends) & _WHICH
                release(*(running[which] if which < first_extra else extra[which - first_extra]))
        return self.s.started
