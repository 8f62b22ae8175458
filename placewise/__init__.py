"""placewise: constraint-optimization placement for Kubernetes batch and AI clusters.

The code lives in the repository's top-level folders (``models/``, ``solver/``,
``adapters/``, ``benchmarks/``), laid out as the design card wants them; this
package gives them one import name.  Its subpackages are symbolic links to those
folders, so ``placewise.models`` *is* ``models/`` for every tool (setuptools,
mypy, import-linter, pytest) without a custom import hook, and nothing is ever
installed under a generic top-level name such as ``models``.
"""
