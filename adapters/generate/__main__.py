"""``python -m adapters.generate [flags]``: the ``generate`` subcommand on its own."""

import sys

from adapters.generate.cli import main

sys.exit(main())
