"""Isolation levels in placement: which nodes a session may run on, and what its pod is told."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

import pytest

from gshare.capacity.isolation import (
    PLAIN_NODE,
    ClusterOffer,
    Isolation,
    NodeTraits,
    admits,
    cpu_placement,
    pod_isolation,
    unmet,
)
from gshare.capacity.placement import (
    CapacitySnapshot,
    CardSnapshot,
    NoFit,
    Placement,
    PlacementIndex,
    competes,
    free_slots,
    kinds_of,
)
from tests.capacity.test_placement import card, exclusive, fraction, mig

HOSPITAL, HOSPITAL_LAB = uuid.UUID(int=901), uuid.UUID(int=902)
COURSE, COURSE_CLASS = uuid.UUID(int=903), uuid.UUID(int=904)
HOSPITAL_NODE = NodeTraits(dedicated_to=HOSPITAL)
LAB_NODE = NodeTraits(dedicated_to=HOSPITAL_LAB)
USERNS_NODE = NodeTraits(user_namespaces=True)
SANDBOX_NODE = NodeTraits(sandbox="gvisor")


def at(level: str, *tenants: uuid.UUID) -> Isolation:
    return Isolation(level, frozenset(tenants))


@pytest.mark.parametrize(
    ("traits", "isolation", "expected"),
    [
        (PLAIN_NODE, at("shared"), True),
        (PLAIN_NODE, at("dedicated", HOSPITAL), False),
        (HOSPITAL_NODE, at("shared"), False),
        (HOSPITAL_NODE, at("shared", COURSE, COURSE_CLASS), False),
        # A tenant's dedicated card takes its sessions whatever their level.
        (HOSPITAL_NODE, at("shared", HOSPITAL, HOSPITAL_LAB), True),
        (HOSPITAL_NODE, at("dedicated", HOSPITAL, HOSPITAL_LAB), True),
        # A group's card takes only that group, not the rest of its organization.
        (LAB_NODE, at("dedicated", HOSPITAL, uuid.UUID(int=905)), False),
        (LAB_NODE, at("dedicated", HOSPITAL, HOSPITAL_LAB), True),
        (PLAIN_NODE, at("user-namespaced"), False),
        (USERNS_NODE, at("user-namespaced"), True),
        (USERNS_NODE, at("sandboxed"), False),
        (SANDBOX_NODE, at("sandboxed"), True),
        (SANDBOX_NODE, at("shared"), True),
        (replace(HOSPITAL_NODE, sandbox="gvisor"), at("dedicated+sandboxed", HOSPITAL), True),
        (HOSPITAL_NODE, at("dedicated+sandboxed", HOSPITAL), False),
        (
            replace(USERNS_NODE, dedicated_to=HOSPITAL),
            at("dedicated+user-namespaced", HOSPITAL),
            True,
        ),
    ],
)
def test_a_node_admits_a_session_only_within_its_level(
    traits: NodeTraits, isolation: Isolation, expected: bool
) -> None:
    assert admits(traits, isolation) is expected


def test_an_unmet_level_names_what_is_missing() -> None:
    hospital = at("dedicated", HOSPITAL, HOSPITAL_LAB)
    assert unmet([PLAIN_NODE, NodeTraits(dedicated_to=COURSE)], hospital) == (
        "Isolation dedicated: no node with this model is dedicated to your organization or group."
    )
    assert unmet([HOSPITAL_NODE], hospital) is None
    assert "user namespaces" in (unmet([PLAIN_NODE, SANDBOX_NODE], at("user-namespaced")) or "")
    assert "sandboxed runtime" in (unmet([USERNS_NODE], at("sandboxed")) or "")
    # Somebody else's sandboxed dedicated node does not meet it either.
    other = NodeTraits(sandbox="kata", dedicated_to=COURSE)
    assert "sandboxed runtime" in (unmet([other, PLAIN_NODE], at("sandboxed")) or "")
    assert unmet([], at("shared")) is not None


def test_the_pod_is_told_its_level_and_the_node_it_must_tolerate() -> None:
    assert pod_isolation(at("shared"), PLAIN_NODE) == {"level": "shared", "userNamespaces": False}
    assert pod_isolation(
        at("dedicated+sandboxed", HOSPITAL), replace(SANDBOX_NODE, dedicated_to=HOSPITAL)
    ) == {
        "level": "dedicated+sandboxed",
        "userNamespaces": False,
        "runtimeClassName": "gvisor",
        "dedicatedTo": str(HOSPITAL),
    }
    # A shared session of the tenant on its own dedicated node must tolerate that node's taint.
    assert pod_isolation(at("shared", HOSPITAL), HOSPITAL_NODE)["dedicatedTo"] == str(HOSPITAL)
    assert pod_isolation(at("user-namespaced"), USERNS_NODE)["userNamespaces"] is True


def _on(traits: NodeTraits, *cards: int) -> list[CardSnapshot]:
    return [replace(card(n).built, traits=traits) for n in cards]


def test_placement_keeps_each_tenant_on_its_own_cards_and_off_the_others() -> None:
    snapshot = CapacitySnapshot(
        tuple(_on(HOSPITAL_NODE, 1) + _on(PLAIN_NODE, 2) + _on(USERNS_NODE, 3))
    )
    index = PlacementIndex(snapshot)
    hospital = replace(exclusive(n=1), isolation=at("dedicated", HOSPITAL, HOSPITAL_LAB))
    placed = index.place(hospital)
    assert isinstance(placed, Placement)
    assert placed.card_id == uuid.UUID(int=1)
    index.assume(placed)
    # The hospital's only card is taken: it waits rather than spill onto a shared card.
    assert index.place(replace(hospital, id=uuid.UUID(int=77))) == NoFit("no_capacity")
    course = replace(exclusive(n=2), isolation=at("shared", COURSE))
    assert index.place(course) == Placement(course.id, uuid.UUID(int=2), course.tier, 0)
    userns = replace(fraction(n=3), isolation=at("user-namespaced", COURSE))
    placed = index.place(userns)
    assert isinstance(placed, Placement)
    assert placed.card_id == uuid.UUID(int=3)
    sandboxed = replace(fraction(n=4), isolation=at("sandboxed", COURSE))
    assert index.place(sandboxed) == NoFit("isolation_unmet")
    # The hospital's card counts in its free slots, in nobody else's.
    fresh = CapacitySnapshot(tuple(_on(HOSPITAL_NODE, 1)))
    assert free_slots(fresh, replace(hospital, isolation=at("shared", HOSPITAL))) == 1
    assert free_slots(fresh, replace(hospital, isolation=at("shared", COURSE))) == 0


def test_a_request_bound_to_its_cluster_is_told_its_level_is_unmet_there() -> None:
    """A resume runs where its volumes are: when only another cluster has a node its level
    admits, it is refused (it could never start), not kept waiting."""
    elsewhere = uuid.UUID(int=4242)
    here = _on(PLAIN_NODE, 1)
    there = [replace(c, cluster_id=elsewhere) for c in _on(HOSPITAL_NODE, 2)]
    index = PlacementIndex(CapacitySnapshot(tuple(here + there)))
    hospital = at("dedicated", HOSPITAL)
    pinned = replace(exclusive(n=1), isolation=hospital, cluster_id=here[0].cluster_id)
    assert index.place(pinned) == NoFit("isolation_unmet")
    # Unbound, or bound to the cluster that meets it, it is placed there.
    assert isinstance(index.place(replace(pinned, cluster_id=None)), Placement)
    assert isinstance(index.place(replace(pinned, cluster_id=elsewhere)), Placement)


def test_a_waiter_holds_back_only_requests_that_may_take_a_card_it_may() -> None:
    """Who waits ahead of whom: only those who share a card of the same model and pool that
    both may use."""
    hospital_only = replace(card(1).mig(("3g.40gb", 0, False)).built, traits=HOSPITAL_NODE)
    plain = _on(PLAIN_NODE, 2)
    cards = kinds_of([hospital_only, *plain, *_on(PLAIN_NODE, 3)])
    assert len(cards) == 2  # one of each kind
    course = replace(fraction(n=1), isolation=at("shared", COURSE))
    hospital = replace(fraction(n=2), isolation=at("dedicated", HOSPITAL))
    shared_hospital = replace(fraction(n=3), isolation=at("shared", HOSPITAL))
    # The hospital at its dedicated level may use only its MIG card: no fraction card is both's.
    assert not competes(hospital, course, cards)
    assert competes(shared_hospital, course, cards)  # the plain cards
    # A MIG waiter and a fraction request never want the same card.
    hospital_mig = replace(mig(n=4), isolation=at("dedicated", HOSPITAL))
    assert not competes(hospital_mig, shared_hospital, cards)
    assert competes(hospital_mig, replace(mig(n=5), isolation=at("shared", HOSPITAL)), cards)
    assert not competes(hospital_mig, replace(mig(n=6), isolation=at("shared", COURSE)), cards)
    # Another model's waiter, or one bound to another cluster, holds no one back.
    assert not competes(replace(course, model="H100"), shared_hospital, cards)
    assert not competes(replace(course, cluster_id=uuid.UUID(int=99)), shared_hospital, cards)


def test_a_hostile_tenant_never_lands_on_another_tenants_dedicated_card() -> None:
    """500 random admissions of four tenants over a mix of nodes, the cards emptied every 40:
    every placement is on a node that admits the request, every dedicated card holds only its
    tenant's sessions, and a request refused as unmet has no such node at all."""
    rng = random.Random(28)
    traits = [
        HOSPITAL_NODE,
        LAB_NODE,
        NodeTraits(dedicated_to=COURSE),
        PLAIN_NODE,
        USERNS_NODE,
        SANDBOX_NODE,
        replace(SANDBOX_NODE, dedicated_to=HOSPITAL),
    ]
    cards = [replace(card(n).built, traits=rng.choice(traits)) for n in range(1, 25)]
    by_id = {c.id: c for c in cards}
    tenants = {
        "hospital": frozenset({HOSPITAL}),
        "lab": frozenset({HOSPITAL, HOSPITAL_LAB}),
        "course": frozenset({COURSE, COURSE_CLASS}),
        "hostile": frozenset({uuid.UUID(int=999)}),
    }
    levels = ["shared", "user-namespaced", "sandboxed", "dedicated", "dedicated+sandboxed"]
    index = PlacementIndex(CapacitySnapshot(tuple(cards)))
    holding: dict[uuid.UUID, list[str]] = {}
    unmet_seen = placed_seen = 0
    for n in range(500):
        if n % 40 == 0:
            index, holding = PlacementIndex(CapacitySnapshot(tuple(cards))), {}
        who = rng.choice(list(tenants))
        isolation = Isolation(rng.choice(levels), tenants[who])
        request = replace(rng.choice([fraction(n=n), exclusive(n=n)]), id=uuid.UUID(int=10_000 + n))
        request = replace(request, isolation=isolation)
        decided = index.place(request)
        if isinstance(decided, Placement):
            home = by_id[decided.card_id]
            assert admits(home.traits, isolation), (who, isolation, home.traits)
            if home.traits.dedicated_to is not None:
                assert home.traits.dedicated_to in tenants[who]
                assert who != "hostile"
            index.assume(decided)
            holding.setdefault(decided.card_id, []).append(who)
            placed_seen += 1
        elif decided == NoFit("isolation_unmet"):
            assert not any(admits(c.traits, isolation) for c in cards)
            unmet_seen += 1
        for card_id, holders in holding.items():
            owner = by_id[card_id].traits.dedicated_to
            assert owner is None or all(owner in tenants[h] for h in holders)
    assert placed_seen > 150
    assert unmet_seen > 10


def test_a_session_without_a_gpu_goes_to_a_cluster_that_meets_its_level() -> None:
    one, two, three = (uuid.UUID(int=n) for n in (1, 2, 3))
    offers = [
        ClusterOffer(one, dedicated_to=COURSE),  # another tenant's whole cluster
        ClusterOffer(two, sandbox="gvisor", drained=True),
        ClusterOffer(three, node_tenants=frozenset({HOSPITAL, HOSPITAL_LAB})),
    ]
    # Never onto another tenant's cluster; a drained one last.
    assert cpu_placement(offers, at("shared", HOSPITAL)) == (three, PLAIN_NODE)
    assert cpu_placement(offers, at("sandboxed", HOSPITAL)) == (two, SANDBOX_NODE)
    # At a dedicated level, onto the tenant's nodes: its group's before its organization's.
    lab = at("dedicated", HOSPITAL, HOSPITAL_LAB)
    assert cpu_placement(offers, lab, HOSPITAL_LAB) == (three, LAB_NODE)
    assert cpu_placement(offers, at("dedicated", HOSPITAL), None) == (three, HOSPITAL_NODE)
    # User namespaces need the admin's word for every node of the cluster.
    assert cpu_placement(offers, at("user-namespaced", HOSPITAL)) is None
    vouched = [*offers, ClusterOffer(uuid.UUID(int=4), user_namespaces=True)]
    assert cpu_placement(vouched, at("user-namespaced", HOSPITAL)) == (
        uuid.UUID(int=4),
        USERNS_NODE,
    )
    # On its own tenant's whole cluster, a shared session tolerates the cluster's taint.
    assert cpu_placement(offers, at("shared", COURSE)) == (one, NodeTraits(dedicated_to=COURSE))
    assert cpu_placement([], at("shared")) is None
