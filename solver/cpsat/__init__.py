"""Joint CP-SAT optimizer (``--solver cpsat``).

How a solve runs
================

One call, :func:`solve_cpsat`, takes a snapshot and returns a plan that the
validator accepts and that is never worse than the warm start.  The package
is split by role: ``model/`` builds the CP model, ``search/`` solves it stage
by stage, ``decode/`` turns values back into a plan; ``solve.py`` is the
pipeline below, in order (each step as *module:function*, relative to this
package unless it starts with ``placewise``; a test resolves every one).

1. Start.  ``solve:solve_cpsat`` runs ``solve:_solve_cpsat``, which opens
   one ``placewise.solver.budget:Budget`` for ``--time-limit``; quotas or
   usage beyond int64 (``solve:saturated``) leave the plan to Kueue's greedy.
   ``solve:_start`` leaves work about to finish alone
   (``solve:_leave_to_finish``), compiles the problem
   (``placewise.solver.problem.compile:compile_problem``: the index tables
   and their placement, one complete ``Problem``), picks the warm start
   (``solve:_warm_start``: Kueue's greedy, or ``search.warmstart:best_fit``
   when the greedy would not fit the budget, or the better of both), settles
   its victims (``placewise.solver.settle:settle_preemptions``) and fixes the
   workloads the model cannot express at its decision
   (``solve:_keep_unsupported``).  Only then does a second compile happen,
   and only when the warm start admits such workloads: which workloads the
   model cannot express is known from the first compile, their decision
   from the warm start that reads it, and the model must count them as
   running.
2. Too large to model whole (``solve:_large``): the warm start is
   best-fit with evictions only within the first share of the budget, and
   is not settled (the final settle validates once); filled with what
   fits beside its victims (``solve:_filled_around_victims`` via
   ``decode.finish:fill``), it is improved part by part of the
   topology (``search.partition:PartitionSearch``: each round compiles a
   small problem over a few blocks, ``search.partition:sub_problem``, its
   quota what the rest of the plan leaves, and searches it stage by stage);
   the host-class LP proves each tier's bound
   (``placewise.solver.bound.tiers:class_tiers``), else the relaxed model
   (``search.ceiling:relaxed_tiers``), else, with no time left, the pending
   demand (``placewise.solver.bound.tiers:demand_tiers``).  Every step stops
   at the budget less the final validation's reserve (``solve:_reserve``).
3. Build.  ``solve:_build`` restricts a large model to each pod set's
   roomiest domains (``placewise.solver.problem.layout:restrict``) and builds
   ``model.cpmodel:CPModel``: variables (``model.variables:Variables``),
   constraints (``model.constraints:Constraints.add_constraints``; a
   victim's freed room only for the queues entitled to it,
   ``model.foreign:build``), and the
   lexicographic stages (``model.objective:Objective.build``: GPUs per
   priority tier, then the tie-breaks).
4. Hint.  ``solve:_hint`` turns the warm start into values of the model
   (``model.cpmodel:CPModel.hint`` via ``decode.plan_io:decisions_from_plan``);
   under fair sharing ``solve:_fairness_floor`` keeps the search no less
   fair than the warm start.
5. Search.  ``search.stages:run_stages`` gives each stage a share of the
   budget and maximises it (``search.stages:solve_stage``), holding every
   earlier stage at its value.  Beside CP-SAT (``search.race:solver_for``)
   run, by model size: HiGHS's MIP or LP in a child process
   (``search.race:Race``), or the rack search (``search.lns:RackSearch``)
   while one CP-SAT worker proves the bound
   (``search.stages:prove_and_search`` with ``search.race:Prover``).
6. Decode.  ``model.cpmodel:CPModel.plan`` reads the values back
   (``decode.plan_io:plan_from_values``, placements by
   ``decode.placement_io:decode``: the units the model assigns to victims'
   leaves first, then deepest domains first); ``solve:_finished`` fills what still fits
   (``decode.finish:fill``), settles the victims and says why the rest waits
   (``decode.finish:explain``).
7. Accept.  ``decode.accept:refused`` returns the warm start (status
   FALLBACK) when the plan ranks below it (``decode.accept:worse``), runs
   fewer GPUs than Kueue's plan, breaks a hold at Kueue's plan or shares a
   cohort less fairly.
8. Report.  ``decode.report:tier_report`` states GPUs per tier and each
   tier's proven bound, widened for workloads the model leaves out
   (``decode.report:allow_outside``), bounded again on the relaxed model
   when a restricted model priced its victims (``decode.report:gpu_bounds``),
   beside Kueue's own figures (``decode.report:with_greedy``);
   ``solve:_solved`` writes the solver's report into the plan.

The tuning constants of every step are in ``tuning`` (one home); the time
is one ``placewise.solver.budget:Budget``, shared down the steps.
"""

from placewise.solver.cpsat.model.cpmodel import CpSatParams as CpSatParams
from placewise.solver.cpsat.solve import solve_cpsat as solve_cpsat
from placewise.solver.policy import Policy as Policy

__all__ = ["CpSatParams", "Policy", "solve_cpsat"]
