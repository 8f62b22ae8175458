"""The client layer: the only room of the sidecar that talks to the API server.

``client`` wraps the official Kubernetes client (the one module here that
imports it, an import contract in pyproject.toml), ``informer`` keeps the
list-then-watch caches, ``leader`` holds the Lease, ``events`` writes Events
off the hot path.
"""
