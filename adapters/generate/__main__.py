"""``python -m placewise.adapters.generate [flags]``: ``generate`` on its own."""

import sys

from placewise.adapters.generate.cli import main

sys.exit(main())
