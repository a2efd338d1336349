"""`python -m gshare.demo` (what `make demo` runs)."""

import contextlib

from gshare.demo.stack import main

with contextlib.suppress(KeyboardInterrupt):
    main()
