"""``python -m placewise``: the same command line as the ``placewise`` script."""

from placewise.cli import main

raise SystemExit(main())
