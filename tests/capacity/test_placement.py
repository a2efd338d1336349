"""Placement over card snapshots: examples with whole results and properties."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gshare.capacity.placement import (
    CapacitySnapshot,
    CardSnapshot,
    MigInstance,
    NoFit,
    Placement,
    PlacementIndex,
    PlacementRequest,
    free_slots,
    place_request,
    slot_limit,
)

CLUSTER = uuid.UUID(int=0)
A100 = "A100-80GB"
A100_MIB = 81920


def card_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


def request_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=1_000_000 + n)


@dataclass(frozen=True)
class CardBuilder:
    built: CardSnapshot

    def carved(self, tier: str, *slots: int) -> CardBuilder:
        return CardBuilder(replace(self.built, carved_tier=tier, allocated_slots=frozenset(slots)))

    def mig(self, *instances: tuple[str, int, bool]) -> CardBuilder:
        made = tuple(MigInstance(p, s, o) for p, s, o in instances)
        return CardBuilder(replace(self.built, pool="mig", mig_instances=made))

    def unhealthy(self) -> CardBuilder:
        return CardBuilder(replace(self.built, healthy=False))

    def missing(self) -> CardBuilder:
        return CardBuilder(replace(self.built, missing=True))


def card(
    n: int, model: str = A100, memory_mib: int = A100_MIB, split_count: int = 10
) -> CardBuilder:
    return CardBuilder(
        CardSnapshot(card_id(n), CLUSTER, f"node-{n // 8}", model, memory_mib, split_count)
    )


def snapshot(
    *cards: CardBuilder, reserved: dict[uuid.UUID, uuid.UUID] | None = None
) -> CapacitySnapshot:
    return CapacitySnapshot(tuple(c.built for c in cards), reserved or {})


def fraction(
    tier: str = "1/4", n: int = 1, model: str = A100, slots: int | None = None
) -> PlacementRequest:
    per_card = slots if slots is not None else int(tier.split("/")[1])
    return PlacementRequest(
        request_id(n),
        f"{model}:{tier}",
        "fraction",
        model,
        A100_MIB // per_card,
        100 // per_card,
        per_card,
    )


def exclusive(n: int = 1, model: str = A100) -> PlacementRequest:
    return PlacementRequest(request_id(n), f"{model}:exclusive", "exclusive", model, A100_MIB, 100)


def mig(profile: str = "3g.40gb", n: int = 1, model: str = A100) -> PlacementRequest:
    return PlacementRequest(
        request_id(n), f"{model}:mig-{profile}", "mig", model, 40960, 42, 1, mig_profile=profile
    )


QUARTER = f"{A100}:1/4"
HALF = f"{A100}:1/2"


def test_fraction_takes_the_fullest_card_of_its_tier() -> None:
    snap = snapshot(card(1).carved(QUARTER, 0), card(2).carved(QUARTER, 0, 1), card(3))
    assert place_request(snap, fraction("1/4")) == Placement(request_id(1), card_id(2), QUARTER, 2)


def test_fraction_takes_an_empty_card_when_its_tier_is_full() -> None:
    snap = snapshot(card(1).carved(QUARTER, 0, 1, 2, 3), card(3), card(2))
    assert place_request(snap, fraction("1/4")) == Placement(request_id(1), card_id(2), QUARTER, 0)


def test_fraction_never_lands_on_a_card_carved_to_another_tier() -> None:
    snap = snapshot(card(1).carved(HALF, 0))
    assert place_request(snap, fraction("1/4")) == NoFit("no_capacity")


def test_an_emptied_card_can_be_carved_again() -> None:
    snap = snapshot(card(1).carved(HALF))
    assert place_request(snap, fraction("1/4")) == Placement(request_id(1), card_id(1), QUARTER, 0)


def test_split_count_caps_the_slots() -> None:
    snap = snapshot(card(1, split_count=2).carved(f"{A100}:1/8", 0, 1))
    assert place_request(snap, fraction("1/8")) == NoFit("no_capacity")


def test_exclusive_takes_only_an_empty_card() -> None:
    snap = snapshot(card(1).carved(QUARTER, 0), card(2))
    assert place_request(snap, exclusive()) == Placement(
        request_id(1), card_id(2), f"{A100}:exclusive", 0
    )
    assert place_request(snapshot(card(1).carved(QUARTER, 0)), exclusive()) == NoFit("no_capacity")


def test_unhealthy_missing_and_other_models_are_not_used() -> None:
    snap = snapshot(card(1).unhealthy(), card(2).missing(), card(3, model="H100-80GB"))
    assert place_request(snap, exclusive()) == NoFit("no_card_of_model")


def test_free_slots_count_what_each_tier_could_take_now() -> None:
    snap = snapshot(
        card(1).carved(QUARTER, 0, 1),
        card(2).carved(HALF, 0),
        card(3),
        card(4).unhealthy(),
        card(5),
        card(6, model="H100-80GB"),
        card(7).mig(("3g.40gb", 0, True), ("3g.40gb", 4, False), ("1g.10gb", 6, False)),
        reserved={card_id(5): request_id(99)},
    )
    # 1/4: two left on card 1, four on the empty card 3; card 2 is carved to 1/2.
    assert free_slots(snap, fraction("1/4")) == 6
    assert free_slots(snap, fraction("1/2")) == 1 + 2
    assert free_slots(snap, exclusive()) == 1
    assert free_slots(snap, mig("3g.40gb")) == 1
    assert free_slots(snap, exclusive(model="B200")) == 0


def test_mig_takes_a_free_instance_of_its_profile() -> None:
    snap = snapshot(
        card(1).mig(("3g.40gb", 0, True), ("3g.40gb", 4, False)),
        card(2).mig(("4g.40gb", 0, False)),
    )
    assert place_request(snap, mig("3g.40gb")) == Placement(
        request_id(1), card_id(1), f"{A100}:mig-3g.40gb", None, "3g.40gb", 4
    )
    assert place_request(snap, mig("1g.10gb")) == NoFit("no_capacity")


def test_fractions_never_land_on_mig_cards() -> None:
    assert place_request(snapshot(card(1).mig(("7g.80gb", 0, False))), fraction()) == NoFit(
        "no_card_of_model"
    )


def test_a_reserved_card_takes_only_its_request() -> None:
    snap = snapshot(card(1), card(2), reserved={card_id(1): request_id(9)})
    assert place_request(snap, exclusive(1)).card_id == card_id(2)  # type: ignore[union-attr]
    assert place_request(snap, exclusive(9)).card_id == card_id(1)  # type: ignore[union-attr]


def test_a_card_held_for_a_booking_takes_only_requests_within_it() -> None:
    booking = uuid.UUID(int=77)
    snap = CapacitySnapshot((card(1).built, card(2).built), {}, {card_id(1): booking})
    assert place_request(snap, exclusive(1)).card_id == card_id(2)  # type: ignore[union-attr]
    within = replace(exclusive(2), booking_id=booking)
    assert place_request(snap, within).card_id == card_id(1)  # type: ignore[union-attr]
    # Another booking's member is no member of this one.
    other = replace(exclusive(3), booking_id=uuid.UUID(int=78))
    only_held = CapacitySnapshot((card(1).built,), {}, {card_id(1): booking})
    assert place_request(only_held, other) == NoFit("no_capacity")


def test_assume_fills_a_card_then_moves_on() -> None:
    index = PlacementIndex(snapshot(card(2), card(1)))
    taken = []
    for n in range(6):
        placement = index.place(fraction("1/4", n))
        assert isinstance(placement, Placement)
        index.assume(placement)
        taken.append((placement.card_id, placement.slot))
    assert taken == [(card_id(1), s) for s in range(4)] + [(card_id(2), 0), (card_id(2), 1)]


# Properties ------------------------------------------------------------------------------

MODELS = [A100, "H100-80GB"]
TIERS = ["1/2", "1/4", "1/8"]
PROFILES = ["1g.10gb", "3g.40gb"]


@st.composite
def cards_strategy(draw: st.DrawFn) -> list[CardSnapshot]:
    count = draw(st.integers(0, 12))
    cards = []
    for n in range(count):
        model = draw(st.sampled_from(MODELS))
        split = draw(st.integers(1, 10))
        built = card(n, model=model, split_count=split)
        if draw(st.booleans()):
            built = built.mig(
                *[
                    (draw(st.sampled_from(PROFILES)), start, draw(st.booleans()))
                    for start in range(draw(st.integers(0, 3)))
                ]
            )
        else:
            tier = draw(st.sampled_from([*TIERS, "exclusive"]))
            limit = 1 if tier == "exclusive" else min(split, int(tier.split("/")[1]))
            used = draw(st.integers(0, limit))
            built = built.carved(f"{model}:{tier}", *range(used))
        if draw(st.integers(0, 9)) == 0:
            built = built.unhealthy()
        cards.append(built.built)
    return cards


@st.composite
def requests_strategy(draw: st.DrawFn) -> list[PlacementRequest]:
    out = []
    for n in range(draw(st.integers(1, 25))):
        model = draw(st.sampled_from(MODELS))
        kind = draw(st.sampled_from(["fraction", "exclusive", "mig"]))
        if kind == "fraction":
            out.append(fraction(draw(st.sampled_from(TIERS)), n, model))
        elif kind == "exclusive":
            out.append(exclusive(n, model))
        else:
            out.append(mig(draw(st.sampled_from(PROFILES)), n, model))
    return out


def run_all(snap: CapacitySnapshot, requests: list[PlacementRequest]) -> list[Placement | NoFit]:
    index = PlacementIndex(snap)
    results: list[Placement | NoFit] = []
    for r in requests:
        result = index.place(r)
        if isinstance(result, Placement):
            index.assume(result)
        results.append(result)
    return results


def fits_somewhere(
    cards: dict[uuid.UUID, CardSnapshot],
    state: dict[uuid.UUID, tuple[str | None, set[int], set[tuple[str, int]]]],
    r: PlacementRequest,
) -> bool:
    for c in cards.values():
        if not c.usable or c.model != r.model:
            continue
        tier, slots, free = state[c.id]
        if r.kind == "mig":
            if c.pool == "mig" and any(p == r.mig_profile for p, _ in free):
                return True
        elif c.pool == "hami-core" and len(slots) < slot_limit(c, r):
            carvable = not slots or (r.kind == "fraction" and tier == r.tier)
            if carvable:
                return True
    return False


@settings(max_examples=300, deadline=None)
@given(cards_strategy(), requests_strategy())
def test_placements_keep_every_card_within_its_limits(
    cards: list[CardSnapshot], requests: list[PlacementRequest]
) -> None:
    snap = CapacitySnapshot(tuple(cards))
    by_id = {c.id: c for c in cards}
    state = {
        c.id: (
            c.carved_tier,
            set(c.allocated_slots),
            {(i.profile, i.start) for i in c.mig_instances if not i.occupied},
        )
        for c in cards
    }
    results = run_all(snap, requests)
    for r, result in zip(requests, results, strict=True):
        if isinstance(result, NoFit):
            assert not fits_somewhere(by_id, state, r), "a fitting card existed"
            continue
        c = by_id[result.card_id]
        tier, slots, free = state[c.id]
        assert c.usable
        assert c.model == r.model
        if r.kind == "mig":
            assert c.pool == "mig"
            assert (r.mig_profile, result.mig_start) in free
            free.discard((r.mig_profile or "", result.mig_start or 0))
            continue
        assert c.pool == "hami-core"
        if r.kind == "exclusive":
            assert not slots
        assert not slots or tier == r.tier, "tiers mixed on a card"
        assert result.slot is not None
        assert result.slot not in slots
        slots.add(result.slot)
        state[c.id] = (r.tier, slots, free)
        assert len(slots) <= c.split_count
        assert len(slots) <= r.slots_per_card
        assert len(slots) * r.vram_mib <= c.memory_mib
        assert len(slots) * r.compute_percent <= 100


@settings(max_examples=100, deadline=None)
@given(cards_strategy(), requests_strategy(), st.randoms())
def test_placement_is_deterministic(
    cards: list[CardSnapshot], requests: list[PlacementRequest], rnd: object
) -> None:
    shuffled = list(cards)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    first = run_all(CapacitySnapshot(tuple(cards)), requests)
    again = run_all(CapacitySnapshot(tuple(shuffled)), requests)
    assert first == again
