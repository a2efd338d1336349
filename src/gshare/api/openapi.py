"""Prints the OpenAPI spec that the console's API types are generated from."""

from __future__ import annotations

import json
import sys

from gshare.api.app import create_app
from gshare.kit.settings import Settings


def spec() -> dict[str, object]:
    app = create_app(Settings(), database_url="postgresql://unused/unused")
    return app.openapi()


def main() -> None:
    json.dump(spec(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
