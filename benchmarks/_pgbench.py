"""Running pgbench, the baseline the database benchmarks compare the service layer with."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path


def pgbench_tps(
    bin_dir: Path, socket_dir: str, script: Path, clients: int, seconds: float
) -> float:
    """Transactions per second of `script` run by `clients` clients on 2 threads, with
    prepared statements, against the `gshare` database."""
    result = subprocess.run(
        [
            str(bin_dir / "pgbench"),
            *("-h", socket_dir, "-U", "postgres", "-n"),
            *("-c", str(clients), "-j", "2", "-M", "prepared"),
            *("-T", str(max(1, round(seconds))), "-f", str(script), "gshare"),
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"pgbench failed:\n{result.stdout}\n{result.stderr}")
    match = re.search(r"tps = ([0-9.]+)", result.stdout)
    if match is None:
        raise SystemExit(f"pgbench printed no tps:\n{result.stdout}\n{result.stderr}")
    return float(match.group(1))
