"""The solve engine: from the caches to a plan, and from the plan to pods.

``snapshot`` (with ``gangs`` and ``synth``) builds the batch solver's
snapshot from the caches, ``solveloop`` re-solves on change (``stability``
says when a re-solve may take back a decision), ``placement`` projects the
plan onto pods, ``preempt`` evicts its victims, ``metrics`` counts it all.
It reads the cluster only through the client layer (``serve.kube``).
"""
