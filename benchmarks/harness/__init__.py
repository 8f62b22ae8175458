"""``placewise bench``: solvers side by side on the same instances, one report.

``matrix`` builds the experiments from the committed family configs,
``runner`` runs them in worker processes (solve, validate, measure),
``metrics`` scores a plan from the plan and the snapshot alone,
``simulate`` replays arrivals over time, ``trace`` calls the Alibaba trace
replay of :mod:`placewise.benchmarks.fgd`, and ``report`` writes Markdown, CSV and PNG.
"""
