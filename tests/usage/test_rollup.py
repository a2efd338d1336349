"""The rollup's arithmetic: spans cut at the hour, credits that add up to the captures, and the
same totals however a span is cut into ticks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from gshare.sessions.metering import owed
from gshare.sessions.thinning import Point
from gshare.usage.rollup import MAX_SAMPLE_SPAN, Mark, Span, roll

START = datetime(2026, 12, 1, 9, 40, 12, 500_000, tzinfo=UTC)
PRICE = 1_234_567  # micro-credits an hour


def _span(mark: Mark, target: datetime, captured: int | None = None, share: float = 0.25) -> Span:
    if captured is None:
        captured = owed(PRICE, START, target)
    return Span(START, PRICE, share, captured, mark, target)


def test_a_span_is_cut_at_each_hour_and_its_credits_are_what_metering_owes() -> None:
    end = START + timedelta(hours=2, minutes=5)
    pieces, mark = roll(_span(Mark(START), end), [], 5.0)
    assert [p.hour.hour for p in pieces] == [9, 10, 11]
    assert [p.held_seconds for p in pieces] == [19 * 60 + 47.5, 3600, 45 * 60 + 12.5]
    assert [p.gpu_seconds for p in pieces] == [p.held_seconds * 0.25 for p in pieces]
    assert sum(p.credits for p in pieces) == owed(PRICE, START, end) == mark.credits
    assert (
        pieces[1].credits
        == owed(PRICE, START, START.replace(hour=11, minute=0, second=0, microsecond=0))
        - pieces[0].credits
    )
    assert mark.until == end


def test_credits_stop_at_what_the_hold_captured() -> None:
    end = START + timedelta(hours=2)
    short = owed(PRICE, START, START + timedelta(minutes=30))
    pieces, mark = roll(_span(Mark(START), end, captured=short), [], 5.0)
    assert sum(p.credits for p in pieces) == short == mark.credits
    assert pieces[-1].credits == 0


def test_a_free_tier_counts_time_and_no_credits() -> None:
    pieces, mark = roll(Span(START, 0, 1.0, None, Mark(START), START + timedelta(hours=1)), [], 5.0)
    assert sum(p.held_seconds for p in pieces) == 3600
    assert sum(p.credits for p in pieces) == 0 == mark.credits


def test_samples_stand_for_the_time_since_the_one_before_at_most_two_minutes() -> None:
    at = START + timedelta(seconds=30)
    samples = [
        Point(at, 2.0, 1000),
        Point(at + timedelta(seconds=30), 80.0, 3000),
        Point(at + timedelta(minutes=10), 1.0, 2000),  # after a gap: stands for two minutes
        Point(at + timedelta(minutes=11), None, None),  # measured, nothing known
    ]
    pieces, mark = roll(_span(Mark(START), START + timedelta(minutes=15)), samples, 5.0)
    (piece,) = pieces
    span = MAX_SAMPLE_SPAN.total_seconds()
    assert piece.measured_seconds == 30 + 30 + span + 60
    assert piece.idle_gpu_seconds == (30 + span) * 0.25
    assert piece.vram_peak_mib == 3000
    assert piece.vram_mib_seconds == 30 * 1000 + 30 * 3000 + span * 2000
    assert mark.sample_at == at + timedelta(minutes=11)


def test_a_sample_on_the_hour_tells_of_the_hour_before() -> None:
    on_the_hour = START.replace(hour=10, minute=0, second=0, microsecond=0)
    pieces, _ = roll(
        _span(
            Mark(START, sample_at=on_the_hour - timedelta(seconds=30)),
            on_the_hour + timedelta(minutes=1),
        ),
        [Point(on_the_hour, 0.0, 10)],
        5.0,
    )
    assert [p.measured_seconds for p in pieces] == [30, 0]


def test_samples_counted_or_past_the_target_are_not_counted() -> None:
    mark = Mark(START + timedelta(minutes=5), sample_at=START + timedelta(minutes=5))
    samples = [
        Point(START + timedelta(minutes=4), 0.0, 1),
        Point(START + timedelta(minutes=9), 0.0, 1),
    ]
    pieces, after = roll(_span(mark, START + timedelta(minutes=8)), samples, 5.0)
    assert sum(p.measured_seconds for p in pieces) == 0
    assert after.sample_at == mark.sample_at


def test_nothing_to_roll_before_the_mark() -> None:
    mark = Mark(START + timedelta(minutes=5), 17, None)
    assert roll(_span(mark, START + timedelta(minutes=5)), [], 5.0) == ([], mark)
    assert roll(_span(mark, START), [], 5.0) == ([], mark)


@given(
    cuts=st.lists(st.integers(1, 4 * 3600), min_size=1, max_size=8),
    sample_offsets=st.lists(st.integers(1, 5 * 3600 * 1000), max_size=40, unique=True),
    utils=st.lists(st.floats(0, 100), min_size=40, max_size=40),
    short_by=st.integers(0, 10_000),
)
def test_rolling_in_ticks_gives_the_same_totals_as_at_once(
    cuts: list[int], sample_offsets: list[int], utils: list[float], short_by: int
) -> None:
    end = START + timedelta(seconds=sum(cuts))
    captured = max(owed(PRICE, START, end) - short_by, 0)
    samples = [
        Point(START + timedelta(milliseconds=ms), utils[i], ms % 5000)
        for i, ms in enumerate(sample_offsets)
    ]

    def totals(pieces: list) -> dict:  # type: ignore[type-arg]
        by_hour: dict = {}  # type: ignore[type-arg]
        for p in pieces:
            t = by_hour.setdefault(p.hour, [0.0, 0.0, 0.0, 0, None])
            t[0] += p.held_seconds
            t[1] += p.measured_seconds
            t[2] += p.idle_gpu_seconds
            t[3] += p.credits
            if p.vram_peak_mib is not None:
                t[4] = max(t[4] or 0, p.vram_peak_mib)
        return {
            h: (round(a, 3), round(b, 3), round(c, 3), d, e)
            for h, (a, b, c, d, e) in by_hour.items()
        }

    whole, whole_mark = roll(Span(START, PRICE, 0.5, captured, Mark(START), end), samples, 5.0)
    stepped, mark, at = [], Mark(START), START
    for cut in cuts:
        at += timedelta(seconds=cut)
        seen = [s for s in samples if s.at <= at]
        pieces, mark = roll(Span(START, PRICE, 0.5, captured, mark, at), seen, 5.0)
        stepped += pieces
    assert totals(stepped) == totals(whole)
    assert mark == whole_mark
    assert sum(p.credits for p in whole) == captured
    assert round(sum(p.held_seconds for p in whole), 6) == sum(cuts)
