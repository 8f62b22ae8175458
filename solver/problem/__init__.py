"""The optimization problem compiled from a snapshot, shared by cpsat and bound.

Index tables (pending workloads, pod-set groups, pod sets, preemption
candidates, the quota tree in kueue-semantics §9's linear form, TAS leaves
with their free capacity) are built once per solve from Kueue's rules in
:mod:`placewise.solver.kueue`; the CP-SAT model (:mod:`placewise.solver.cpsat`)
and the bound (:mod:`placewise.solver.bound`) are both built from them, so a
model and its bound can never disagree about what is being decided.
"""
