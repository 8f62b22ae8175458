"""``python -m placewise``: the same command line as the ``placewise`` script."""

from placewise.adapters.cli import main

raise SystemExit(main())
