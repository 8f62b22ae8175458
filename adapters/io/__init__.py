"""The edges: files in, plans out.

The one bounded reader of untrusted files (:mod:`.documents`, on
:mod:`.yaml_fast`), the decoders of Kubernetes and Kueue objects
(:mod:`.convert`), the instance loader (:mod:`.loader`) and the plan
writers (:mod:`.output`).
"""
