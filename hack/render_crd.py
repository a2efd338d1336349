"""Write the chart's copy of the GShareSession CRD from the operator's definition
(`make chart-crd`); tests/deploy/test_chart.py fails when the two differ."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from gshare.operator.crd import session_crd

CHART_CRD = Path(__file__).resolve().parents[1] / "charts/gshare/crds/gsharesessions.gshare.io.yaml"
HEADER = "# Generated from src/gshare/operator/crd.py by `make chart-crd`; do not edit.\n"


def rendered() -> str:
    return HEADER + str(yaml.safe_dump(session_crd(), sort_keys=True, width=100))


if __name__ == "__main__":
    CHART_CRD.write_text(rendered())
    print(CHART_CRD, file=sys.stderr)
