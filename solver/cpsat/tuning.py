"""The optimizer's tuning constants, in one place.

Each is a measured trade-off (its docstring says which measurement), not a
rule of the model: changing one changes how the time is spent or how large
a model is searched, never which plans are valid.  Representation constants
(the int64 clip of the warm start, the stage range of the objective, the
fixed-point scale of shares) stay beside the code whose arithmetic they are.
"""

from __future__ import annotations

# -- The pipeline (solve.py): warm start, model size, budget reserves.

RELAXED_SHARE = 0.1
"""Share of the time limit kept, when a restricted model's victims are
priced, for the unpriced relaxed model's bounds on GPUs (:func:`_gpu_bounds`)."""
CLASS_SHARE = 0.1
"""Of the time limit, what a restricted model's search leaves to the
host-class LP's per-tier bounds (:mod:`placewise.solver.bound.tiers`):
~1-2 s at 10 s, what the LPs take at 10,000 hosts."""
MIN_BUDGET = 0.5
"""Seconds below which CP-SAT is not started (the warm start is returned)."""
GREEDY_SECONDS_PER_CELL = 2e-6
"""Kueue greedy wall time per pending workload x node, measured on 2 cores
(scale-10000: 2,000 x 10,000 cells in 18-24 s; scale-1000 in 0.4 s)."""
GREEDY_SHARE = 0.5
"""The greedy warm start runs when it is predicted to take at most this
share of the time limit (Kueue's plan is then the floor); the best-fit warm
start always runs."""
RESTRICT_CELLS = 40_000
"""Candidate (pod set, domain) cells above which each pod set keeps only its
roomiest domains (plus its warm start's): the model must build in seconds."""
RESTRICT_TO = 8
"""Domains each pod set keeps in a restricted model (besides its warm
start's)."""
LARGE_CELLS = 200_000
"""Candidate cells beyond which even the restricted model does not pay for
itself within a 10 s budget (10,000 hosts: 610k cells; building, hinting and
searching it left no time to improve anything): the partition search
(search/partition.py) improves the plan instead."""
RACE_VARIABLES = 10_000
"""Models up to this size also run HiGHS's MIP beside CP-SAT on each GPU
stage (it proves the bound CP-SAT's search alone does not reach); beyond it
the MIP would not get past its root within the budget."""

# -- The stages (search/stages.py): how the budget is split among stages and racers.

TIER_WEIGHT = 6
"""Time weight of a GPU stage against a tie-break stage (1): the tie-breaks
polish a plan whose GPUs are fixed, the GPU stages are what the plan and its
bound are read for (scale-1000, objective gpus, CP-SAT seeds 0-11: median gap
to the bound 0.8 % with 12 against 1, 1.0 % with 6)."""
TOP_WEIGHT = 12
"""Time weight of the first GPU stage: the top tier is what a bound is read for."""
CLUSTERS_SHARE = (0.2, 0.6)
"""When the model spans worker clusters, CP-SAT searches first — at least
the first share of the stage, at most the second while it keeps finding
better solutions — and the rack search has the rest.  A gang's move to
another cluster frees racks there and fills racks here, rarely one rack
search round (on multi-cluster seed 3 the top tier was found only by
CP-SAT, after 1.1 s of a 3.3 s stage).  On one cluster the rack search pays
from the start, and CP-SAT only proves (:func:`.race.prover_for`)."""
STALL_SHARE = 0.1
"""CP-SAT without a better solution for this share of the stage has stalled."""
UNPRICED_SHARE = 0.2
"""Share of a priced GPU stage's time for the bound on its GPUs."""
DUAL_SHARE = 0.25
"""Share of a GPU stage's time the relaxed model may use for its ceiling."""

# -- The rack search (search/lns.py).

ROUND_SECONDS = 0.25
"""Wall time of one sub-solve: long enough to repack a few racks."""
DOMAINS_PER_ROUND = 8
"""Domains a round frees: at 4 most sub-solves were proven in 0.03 s (scale-1000,
objective gpus, 10 s, CP-SAT seeds 0-11: median 4,684 GPUs at 6, 4,700 at 8,
4,695 at 10)."""
MIN_DOMAINS = 6
"""Fewer candidate domains than this and the full model is searched alone."""

# -- Fair sharing in the model (model/fairness.py).

SLACK = 100
"""Model units a plan may exceed the exact cap by before the search drops it:
per-term rounding; the exact shares decide acceptance."""

# -- The best-fit warm start (search/warmstart.py, search/packing.py).

MAX_COMBINATIONS = 16
"""Flavor combinations tried per pod-set group (several resource groups)."""
EVICTION_STEP = 128
"""Candidates the best-fit warm start frees at least, beyond what its quota
needs, before it tries a workload's pods again (then twice as many, and so
on): each freed candidate that was not needed is restored one by one, and
freeing fewer lands the pods on a worse spot.  scale-10000 seeds 1-3,
best-fit alone (CPU s; tier 1,000): freeing every candidate at once 4.6-5.5 s,
26,385 / 26,227 / 25,798; 128: 2.4-2.8 s, the same tiers; 32: 2.0-2.3 s,
26,377 / 26,187 / 25,798; 8: 1.9-2.3 s, 26,329 / 26,163 / 25,750."""

# -- Wall-clock floors at the CP-SAT / HiGHS / thread boundaries.

MIN_CPSAT_SECONDS = 0.05
"""CP-SAT is never given less (it needs a moment to load the model and
report the hint back as its first solution)."""
MIN_HIGHS_SECONDS = 0.1
"""HiGHS's child is never given less (it starts a process and reads the
arrays first)."""
STAGE_FLOOR_SECONDS = 0.05
"""A stage with less wall time left keeps its incumbent unsearched (a
wall-clock budget only; a deterministic one runs every stage)."""
RACE_POLL_SECONDS = 0.05
"""How often the hand-over watch looks at CP-SAT's progress."""
LNS_FLOOR_SECONDS = 0.1
"""The rack search starts no round with less time left."""
PROVER_PROBING = 2
"""CP-SAT probing level of the prover (without probing its root stays at
the LP's bound; :func:`.search.race.prover_for`)."""
DEFAULT_WORKERS = 2
"""Workers assumed when ``--workers 0`` (every core) is given, to split
them between CP-SAT and its racers."""
DETERMINISTIC_WORKERS = 8
"""Interleaved subsolvers under a deterministic budget, whatever the cores:
the same plan for any ``--workers``."""

# -- The partition search (search/partition.py), beyond LARGE_CELLS.

MIN_PARTS = 4
"""The partition is by the shallowest topology level with at least this many
domains (79 blocks at 10,000 hosts; 6 racks on a one-block 96-host cluster,
whose parts then gain: tier 1000 196 -> 224-228 GPUs over the greedy)."""
ROUND_HOSTS = 256
"""Hosts one round's sub-problem spans (two 128-host blocks at 10,000 hosts:
2,300-4,800 variables, ~1 s a round on the loaded 2-core machine; eight
blocks, 16,000-19,000 variables, gained nothing more), at most half the
parts."""
PARTITION_ROUND_SECONDS = 0.5
"""Search time of one round's sub-model (its compile and build come on top;
on the 96-host instance its GPU stages took ~0.2 s each, 37-38 rounds in 6 s)."""
PARTITION_WORKERS = 2
"""CP-SAT workers (and rack-search threads) a partition round uses at most.
A round is a ~1 s search of a few-thousand-variable sub-model; on a 16-core
machine (scale-10000 seed 1, CP-SAT seeds 0-2, 10 s) rounds on the solve's
8 or 16 workers ended lower than on 2 (priority-1,000 medians 26,433 and
26,449 against 26,521), so more cores must not reach the rounds until
they run side by side on disjoint parts."""
MIN_ROUND_SECONDS = 0.3
"""No round starts with less time left: compiling and building a sub-problem
takes about this much before its search."""
WARM_SHARE = 0.8
"""Beyond LARGE_CELLS, the share of the time limit (from the solve's start)
after which the best-fit warm start tries no more evictions (highest
priority first, so the top tier's come first).  At 50,000 hosts best-fit
with every eviction took 27 s of CPU on the 2-core machine (71 s before
the changes of search/warmstart.py and packing.py), and without evictions
tier 1,000 has 105,286 GPUs against 131,670: the warm
start's evictions are worth more than the partition rounds (which found
nothing at 10,000 hosts), so they get the budget first."""
VALIDATE_PER_COMPILE = 0.7
"""Beyond LARGE_CELLS, seconds of the final validation reserved per second
the compile took (measured on the 2-core machine, CPU seconds: validation /
compile 0.9 / 1.5 at 10,000 hosts, 4.7 / 8.8 at 50,000; kept above both)."""
BOUND_PER_COMPILE = 1.0
"""Beyond LARGE_CELLS, the host-class LP is begun only with this many
seconds per second of compile left (its model and arrays took 0.7 s of CPU
at 10,000 hosts, 5.6 s at 50,000, besides HiGHS in its children)."""
LARGE_BOUND_SHARE = 0.2
"""Of the time limit, what the partition search leaves to the host-class
LP's per-tier bounds (~1.8 s at 10,000 hosts on the loaded 2-core machine)."""
