"""Every subcommand's parser and run function, and the machinery around them.

One module per subcommand (``register(subparsers)`` and ``run(args)``);
:mod:`.main` holds the global flags, logging and exit codes, :mod:`.status`
the live status line.  The program itself, with the benchmark command,
is composed in :mod:`placewise.cli`.
"""
