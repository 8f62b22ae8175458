"""``placewise sweep``: capacity planning and what-if sweeps over replays.

Modules: ``spec`` (the YAML spec, strict), ``check`` (its names against the
base, before anything runs), ``variants`` (edits of a loaded cluster),
``points`` (one replay or solve per point, and running it), ``executors``
(in-process, a local process pool, Ray), ``run`` (the per-point cache that
lets a sweep resume), ``report`` and ``plots`` (table, spread over seeds,
the target's answer) and ``command`` (the CLI).
"""
