"""Kueue's rules, in one home for every back-end.

The greedy (a re-implementation of Kueue's scheduler), the CP-SAT optimizer,
the bound and the baselines must agree on what Kueue means: the quota tree
and its borrowing/lending arithmetic (:mod:`.quota`), flavor eligibility
(:mod:`.eligibility`), Topology-Aware Scheduling (:mod:`.tas`), how a workload
holds quota (:mod:`.workload`), the pending order (:mod:`.order`) and who may
preempt whom (:mod:`.preemption`).  Back-ends import from here and never from
each other, so a rule cannot drift between two copies.  The validator
(``placewise.models.validate``) deliberately shares none of this code.
"""
