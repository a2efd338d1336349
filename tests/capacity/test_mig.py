"""MIG layouts against the MIG user guide's tables, and the placement search's invariants."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gshare.capacity.mig import (
    COMPUTE_SLICES,
    GEOMETRIES,
    MEMORY_SLICES,
    LayoutAccepted,
    LayoutItem,
    LayoutRefused,
    Placement,
    check_layout,
    geometry_for,
    valid_layouts,
)

A100_40 = "A100-40GB"

# The guide's whole-card combinations for A100-40GB, as multisets, leaving out the later
# 1g.10gb and +me profiles. The guide (Concepts > Partitioning) builds them from placements that
# do not overlap; 4g with 3g was refused only by drivers before R510.
GUIDE_A100_40GB_FULL = {
    ("7g.40gb",),
    ("4g.20gb", "3g.20gb"),
    ("4g.20gb", "2g.10gb", "1g.5gb"),
    ("4g.20gb", "1g.5gb", "1g.5gb", "1g.5gb"),
    ("3g.20gb", "3g.20gb"),
    ("3g.20gb", "2g.10gb", "2g.10gb"),
    ("3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"),
    ("3g.20gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"),
    ("2g.10gb", "2g.10gb", "2g.10gb", "1g.5gb"),
    ("2g.10gb", "2g.10gb", "1g.5gb", "1g.5gb", "1g.5gb"),
    ("2g.10gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"),
    ("1g.5gb",) * 7,
}


def accepted(model: str, layout: Sequence[LayoutItem]) -> tuple[Placement, ...]:
    decision = check_layout(model, layout)
    assert isinstance(decision, LayoutAccepted), decision
    return decision.placements


def refused(model: str, layout: Sequence[LayoutItem]) -> str:
    decision = check_layout(model, layout)
    assert isinstance(decision, LayoutRefused), decision
    return decision.reason


def test_the_guides_whole_card_combinations_are_exactly_the_maximal_layouts() -> None:
    classic = {
        layout
        for layout in valid_layouts(A100_40, maximal_only=True)
        if not any(name.endswith("+me") or name == "1g.10gb" for name in layout)
    }
    assert classic == GUIDE_A100_40GB_FULL


@pytest.mark.parametrize("layout", sorted(GUIDE_A100_40GB_FULL))
def test_every_combination_of_the_guide_is_accepted(layout: tuple[str, ...]) -> None:
    assert len(accepted(A100_40, list(layout))) == len(layout)


def test_two_two_three_places_the_3g_at_four() -> None:
    assert accepted(A100_40, ["3g.20gb", "2g.10gb", "2g.10gb"]) == (
        Placement("2g.10gb", 0),
        Placement("2g.10gb", 2),
        Placement("3g.20gb", 4),
    )


def test_seven_1g_instances_take_starts_zero_to_six() -> None:
    assert accepted(A100_40, ["1g.5gb"] * 7) == tuple(Placement("1g.5gb", s) for s in range(7))


def test_four_1g_beside_a_3g_need_the_3g_at_four() -> None:
    assert accepted(A100_40, ["1g.5gb"] * 4 + ["3g.20gb"])[-1] == Placement("3g.20gb", 4)


@pytest.mark.parametrize(
    ("layout", "reason"),
    [
        (["4g.20gb", "4g.20gb"], "A100-40GB holds at most 1 x 4g.20gb."),
        (
            ["3g.20gb", "3g.20gb", "1g.5gb"],
            "The layout needs 9 memory slices; A100-40GB has 8.",
        ),
        (["7g.40gb", "1g.5gb"], "The layout needs 8 compute slices; A100-40GB has 7."),
        (
            # 7 compute slices, but 1g.10gb takes two memory slices.
            ["3g.20gb", "2g.10gb", "1g.10gb", "1g.5gb"],
            "The layout needs 9 memory slices; A100-40GB has 8.",
        ),
        (
            ["2g.10gb", "2g.10gb", "2g.10gb", "1g.5gb", "1g.5gb"],
            "The layout needs 8 compute slices; A100-40GB has 7.",
        ),
        (
            ["1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.5gb"],
            "The layout needs 9 memory slices; A100-40GB has 8.",
        ),
        (["1g.5gb+me", "1g.5gb+me"], "A100-40GB holds at most 1 x 1g.5gb+me."),
        ([], "A MIG layout needs at least one instance."),
    ],
)
def test_layouts_that_do_not_fit_are_refused_with_their_reason(
    layout: list[str], reason: str
) -> None:
    assert refused(A100_40, layout) == reason


def test_4g_beside_3g_is_accepted_with_the_3g_at_four() -> None:
    assert accepted(A100_40, ["3g.20gb", "4g.20gb"]) == (
        Placement("4g.20gb", 0),
        Placement("3g.20gb", 4),
    )


def test_a_3g_fixed_at_zero_leaves_no_room_for_a_4g() -> None:
    assert refused(A100_40, [("3g.20gb", 0), "4g.20gb"]) == (
        "The instances add up but cannot be placed without overlapping memory slices."
    )


# Profile table per model: (name, compute slices, memory slices, allowed starts, max instances).
# Slices and counts from the guide's "Supported MIG Profiles" tables; starts from the
# `nvidia-smi mig -lgipp` listing in its "List GPU Instance Profiles" section.
GUIDE_PROFILES = {
    "A100-40GB": (
        ("1g.5gb", 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
        ("1g.5gb+me", 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
        ("1g.10gb", 1, 2, (0, 2, 4, 6), 4),
        ("2g.10gb", 2, 2, (0, 2, 4), 3),
        ("3g.20gb", 3, 4, (0, 4), 2),
        ("4g.20gb", 4, 4, (0,), 1),
        ("7g.40gb", 7, 8, (0,), 1),
    ),
    "A100-80GB": (
        ("1g.10gb", 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
        ("1g.10gb+me", 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
        ("1g.20gb", 1, 2, (0, 2, 4, 6), 4),
        ("2g.20gb", 2, 2, (0, 2, 4), 3),
        ("3g.40gb", 3, 4, (0, 4), 2),
        ("4g.40gb", 4, 4, (0,), 1),
        ("7g.80gb", 7, 8, (0,), 1),
    ),
    "H100-80GB": (
        ("1g.10gb", 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
        ("1g.10gb+me", 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
        ("1g.20gb", 1, 2, (0, 2, 4, 6), 4),
        ("2g.20gb", 2, 2, (0, 2, 4), 3),
        ("3g.40gb", 3, 4, (0, 4), 2),
        ("4g.40gb", 4, 4, (0,), 1),
        ("7g.80gb", 7, 8, (0,), 1),
    ),
    "H200-141GB": (
        ("1g.18gb", 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
        ("1g.18gb+me", 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
        ("1g.35gb", 1, 2, (0, 2, 4, 6), 4),
        ("2g.35gb", 2, 2, (0, 2, 4), 3),
        ("3g.71gb", 3, 4, (0, 4), 2),
        ("4g.71gb", 4, 4, (0,), 1),
        ("7g.141gb", 7, 8, (0,), 1),
    ),
}


@pytest.mark.parametrize("model", sorted(GUIDE_PROFILES))
def test_every_profile_matches_the_guides_tables(model: str) -> None:
    assert (
        tuple(
            (p.name, p.compute_slices, p.memory_slices, p.starts, p.max_instances)
            for p in GEOMETRIES[model].profiles
        )
        == GUIDE_PROFILES[model]
    )


@pytest.mark.parametrize("model", sorted(GEOMETRIES))
def test_the_memory_in_each_name_is_its_share_of_the_card(model: str) -> None:
    card_gb = int(model.rsplit("-", 1)[1].removesuffix("GB"))
    for profile in GEOMETRIES[model].profiles:
        named_gb = int(profile.name.split(".")[1].removesuffix("+me").removesuffix("gb"))
        share = card_gb * profile.memory_slices / MEMORY_SLICES
        assert named_gb == math.floor(share + 0.5), profile.name


def test_h200_memory_is_what_the_driver_reports() -> None:
    memory = {p.name: p.memory_mib for p in GEOMETRIES["H200-141GB"].profiles}
    assert memory == {
        "1g.18gb": 16384,
        "1g.18gb+me": 16384,
        "1g.35gb": 33024,
        "2g.35gb": 33024,
        "3g.71gb": 71168,
        "4g.71gb": 71168,
        "7g.141gb": 143104,
    }


def test_the_guides_example_geometries_are_accepted() -> None:
    # "Creating GPU Instances": a 3-2-1-1 geometry and a 2-1-1-1-1-1 geometry, as the driver
    # placed them.
    assert accepted(A100_40, [("1g.5gb", 0), ("1g.5gb", 1), ("2g.10gb", 2), ("3g.20gb", 4)]) == (
        Placement("1g.5gb", 0),
        Placement("1g.5gb", 1),
        Placement("2g.10gb", 2),
        Placement("3g.20gb", 4),
    )
    assert accepted(
        A100_40,
        [("1g.5gb", s) for s in (0, 1, 2, 3, 6)] + [("2g.10gb", 4)],
    )[4] == Placement("2g.10gb", 4)
    assert accepted(A100_40, [("3g.20gb", 4), ("3g.20gb", 0)]) == (
        Placement("3g.20gb", 0),
        Placement("3g.20gb", 4),
    )


def test_a_3g_placed_at_two_is_refused() -> None:
    assert refused(A100_40, [("3g.20gb", 2)]) == "3g.20gb starts only at 0, 4, not at 2."


def test_given_placements_that_overlap_are_refused() -> None:
    assert refused(A100_40, [("2g.10gb", 2), ("1g.5gb", 3)]) == (
        "1g.5gb at 3 overlaps the memory slices of another instance."
    )


def test_given_placements_are_kept_and_the_rest_placed_around_them() -> None:
    decision = check_layout(A100_40, [("3g.20gb", 0), "2g.10gb", Placement("1g.5gb", 6)])
    assert decision == LayoutAccepted(
        (Placement("3g.20gb", 0), Placement("2g.10gb", 4), Placement("1g.5gb", 6))
    )


def test_a_3g_fixed_at_zero_leaves_no_room_for_four_1g() -> None:
    layout: list[LayoutItem] = [("3g.20gb", 0), "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"]
    assert refused(A100_40, layout) == (
        "The instances add up but cannot be placed without overlapping memory slices."
    )


@pytest.mark.parametrize("spelling", ["7g.80gb", "7g.79gb", "MIG 7g.79gb", " 7G.80GB "])
def test_both_spellings_of_the_a100_80gb_full_profile_are_one_geometry(spelling: str) -> None:
    assert accepted("A100-80GB", [spelling]) == (Placement("7g.80gb", 0),)


def test_the_two_spellings_count_as_one_profile() -> None:
    assert refused("A100-80GB", ["7g.79gb", "7g.80gb"]) == "A100-80GB holds at most 1 x 7g.80gb."


def test_h100_and_h200_follow_the_same_placements() -> None:
    assert accepted("H100-80GB", ["2g.20gb", "2g.20gb", "3g.40gb"])[-1] == Placement("3g.40gb", 4)
    assert accepted("H200-141GB", ["1g.18gb", "3g.71gb", "2g.35gb", "1g.18gb"]) == (
        Placement("2g.35gb", 0),
        Placement("1g.18gb", 2),
        Placement("1g.18gb", 3),
        Placement("3g.71gb", 4),
    )
    assert accepted("H200-141GB", ["4g.71gb", "3g.71gb"]) == (
        Placement("4g.71gb", 0),
        Placement("3g.71gb", 4),
    )


def test_the_older_h200_whole_card_geometries_are_accepted() -> None:
    for layout in (
        ["1g.18gb"] * 7,
        ["1g.18gb", "2g.35gb", "2g.35gb", "2g.35gb"],
        ["3g.71gb", "3g.71gb"],
        ["7g.141gb"],
    ):
        accepted("H200-141GB", layout)


def test_unknown_profiles_and_models_are_refused_by_name() -> None:
    assert refused("A100-80GB", ["1g.5gb"]).startswith("A100-80GB has no MIG profile '1g.5gb'")
    assert refused("T4", ["1g.5gb"]) == "T4 has no MIG geometry GShare knows."
    assert valid_layouts("T4") == ()


def test_profile_memory_is_below_the_card_and_grows_with_slices() -> None:
    for geometry in GEOMETRIES.values():
        full = geometry.profiles[-1]
        assert full.memory_slices == MEMORY_SLICES
        for profile in geometry.profiles:
            assert 0 < profile.memory_mib <= full.memory_mib
            assert all(s + profile.memory_slices <= MEMORY_SLICES for s in profile.starts)


# -- properties ------------------------------------------------------------------------------

MODELS = sorted(GEOMETRIES)


@st.composite
def layouts(draw: st.DrawFn) -> tuple[str, list[str]]:
    model = draw(st.sampled_from(MODELS))
    geometry = GEOMETRIES[model]
    names = [p.name for p in geometry.profiles]
    return model, draw(st.lists(st.sampled_from(names), min_size=1, max_size=8))


def fits_by_brute_force(model: str, names: list[str]) -> bool:
    """An independent oracle: try every start of every instance in the order given, as sets."""
    geometry = geometry_for(model)
    assert geometry is not None
    profiles = [geometry.profile(n) for n in names]

    def place(index: int, used: frozenset[int]) -> bool:
        if index == len(profiles):
            return True
        profile = profiles[index]
        assert profile is not None
        for start in profile.starts:
            cells = frozenset(range(start, start + profile.memory_slices))
            if not used & cells and place(index + 1, used | cells):
                return True
        return False

    return place(0, frozenset())


def assert_sound(model: str, placements: tuple[Placement, ...]) -> None:
    geometry = geometry_for(model)
    assert geometry is not None
    used: set[int] = set()
    compute = 0
    for placement in placements:
        profile = geometry.profile(placement.profile)
        assert profile is not None
        assert profile.name == placement.profile
        assert placement.start in profile.starts
        cells = set(range(placement.start, placement.start + profile.memory_slices))
        assert not used & cells
        assert max(cells) < MEMORY_SLICES
        used |= cells
        compute += profile.compute_slices
    assert compute <= COMPUTE_SLICES


@settings(max_examples=400)
@given(layouts())
def test_an_accepted_layout_never_overlaps_and_re_validates(case: tuple[str, list[str]]) -> None:
    model, names = case
    decision = check_layout(model, names)
    if isinstance(decision, LayoutAccepted):
        assert sorted(p.profile for p in decision.placements) == sorted(
            GEOMETRIES[model].profile(n).name  # type: ignore[union-attr]
            for n in names
        )
        assert_sound(model, decision.placements)
        again = check_layout(model, [(p.profile, p.start) for p in decision.placements])
        assert again == decision


@settings(max_examples=400, deadline=None)
@given(layouts())
def test_the_search_accepts_exactly_what_some_assignment_fits(case: tuple[str, list[str]]) -> None:
    model, names = case
    geometry = GEOMETRIES[model]
    profiles = [geometry.profile(n) for n in names]
    canonical = [p.name for p in profiles if p is not None]
    compute = sum(p.compute_slices for p in profiles if p is not None)
    counts_allowed = all(canonical.count(p.name) <= p.max_instances for p in geometry.profiles)
    within_limits = compute <= COMPUTE_SLICES and counts_allowed
    decision = check_layout(model, names)
    assert isinstance(decision, LayoutAccepted) == (
        within_limits and fits_by_brute_force(model, names)
    )


@settings(max_examples=300)
@given(st.sampled_from(MODELS), st.data())
def test_given_placements_are_accepted_exactly_when_sound(model: str, data: st.DataObject) -> None:
    geometry = GEOMETRIES[model]
    placements = data.draw(
        st.lists(
            st.builds(
                Placement,
                st.sampled_from([p.name for p in geometry.profiles]),
                st.integers(0, MEMORY_SLICES - 1),
            ),
            min_size=1,
            max_size=7,
        )
    )
    decision = check_layout(model, placements)
    try:
        assert_sound(model, tuple(placements))
        sound = True
    except AssertionError:
        sound = False
    names = [p.profile for p in placements]
    limited = any(names.count(p.name) > p.max_instances for p in geometry.profiles)
    assert isinstance(decision, LayoutAccepted) == (sound and not limited)
    if isinstance(decision, LayoutAccepted):
        assert sorted(decision.placements, key=lambda p: p.start) == sorted(
            placements, key=lambda p: p.start
        )
