"""The modes: how the engine's plan reaches the cluster.

``extender`` (with its ``wire`` types) answers kube-scheduler's extender
calls, ``binder`` binds gangs itself, ``kueue_mode`` writes Kueue Workload
admissions, ``multikueue`` dispatches to worker clusters, ``actuator`` runs
the mode the configuration picks.
"""
