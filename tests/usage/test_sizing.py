"""Right-sizing advice (pure): a cheaper tier only when enough sessions peaked well under it,
a warning when they came close to the limit, and words that say so."""

from __future__ import annotations

import uuid

from gshare.usage.sizing import Peak, TierChoice, advise

GIB = 1024
HALF = TierChoice(uuid.uuid4(), "A100-80GB", "1/2", 40 * GIB, 4_000_000)
QUARTER = TierChoice(uuid.uuid4(), "A100-80GB", "1/4", 20 * GIB, 2_000_000)
EIGHTH = TierChoice(uuid.uuid4(), "A100-80GB", "1/8", 10 * GIB, 1_000_000)
OTHER_MODEL = TierChoice(uuid.uuid4(), "L4", "1/2", 12 * GIB, 500_000)
CHOICES = [HALF, QUARTER, EIGHTH, OTHER_MODEL]


def test_a_cheaper_tier_that_holds_the_peak_with_room_is_suggested() -> None:
    peaks = [Peak(9 * GIB, 40 * GIB)] * 6 + [Peak(7 * GIB, 40 * GIB)] * 2
    advice = advise(peaks, HALF, CHOICES)
    assert advice.smaller == QUARTER  # 1/8 has 10 GiB: under 9 GiB with 20% to spare
    assert advice.peak_mib == 9 * GIB
    assert advice.in_words == (
        "Your last 8 sessions on 1/2 A100-80GB peaked at 9 GiB: 1/4 A100-80GB would have "
        "fitted, at half the price."
    )


def test_small_peaks_reach_the_cheapest_tier_of_the_same_model_only() -> None:
    advice = advise([Peak(3 * GIB, 40 * GIB)] * 4, HALF, CHOICES)
    assert advice.smaller == EIGHTH
    assert advice.in_words is not None
    assert "at a quarter of the price" in advice.in_words


def test_too_few_sessions_say_nothing_and_none_say_nothing_either() -> None:
    assert advise([Peak(3 * GIB, 40 * GIB)] * 2, HALF, CHOICES).smaller is None
    assert advise([Peak(3 * GIB, 40 * GIB)] * 2, HALF, CHOICES).in_words is None
    nothing = advise([], HALF, CHOICES)
    assert (nothing.sessions, nothing.peak_mib, nothing.in_words) == (0, None, None)


def test_sessions_close_to_the_limit_are_warned_and_never_sent_smaller() -> None:
    peaks = [Peak(19 * GIB, 20 * GIB), Peak(5 * GIB, 20 * GIB), Peak(4 * GIB, 20 * GIB)]
    advice = advise(peaks, QUARTER, CHOICES)
    assert advice.near_limit == 1
    assert advice.smaller is None
    assert advice.in_words == (
        "1 of your last 3 sessions on 1/4 A100-80GB came within 10% of its 20 GiB limit: a "
        "tier with more memory would give them room."
    )


def test_the_smallest_tier_has_nothing_smaller() -> None:
    assert advise([Peak(1 * GIB, 10 * GIB)] * 5, EIGHTH, CHOICES).smaller is None
