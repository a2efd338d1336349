"""The chart's CRD is the operator's own definition, never a second hand-kept copy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

from gshare.operator.crd import session_crd

ROOT = Path(__file__).resolve().parents[2]


def test_the_charts_crd_is_the_one_the_operator_defines() -> None:
    chart_copy = ROOT / "charts" / "gshare" / "crds" / "gsharesessions.gshare.io.yaml"
    assert yaml.safe_load(chart_copy.read_text()) == session_crd(), (
        "the chart's CRD differs from src/gshare/operator/crd.py: run `make chart-crd`"
    )


def test_the_rendering_is_what_make_chart_crd_writes() -> None:
    spec = importlib.util.spec_from_file_location("render_crd", ROOT / "hack" / "render_crd.py")
    assert spec is not None
    assert spec.loader is not None
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    chart_copy = ROOT / "charts" / "gshare" / "crds" / "gsharesessions.gshare.io.yaml"
    assert chart_copy.read_text() == render.rendered()
