"""Kubernetes matching rules: taints, tolerations, label and node selectors.

Both the solvers and the validator ask the same questions ("may this pod
template land on nodes with these labels and taints?"), so the Kubernetes
semantics live here once, on plain immutable records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

Labels = Mapping[str, str]


class Frozen(BaseModel):
    """Base of every domain record: immutable and strict about its fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Taint(Frozen):
    key: str
    value: str = ""
    effect: str

    @property
    def blocks_scheduling(self) -> bool:
        """PreferNoSchedule is only a preference; the others keep pods away."""
        return self.effect in ("NoSchedule", "NoExecute")


class Toleration(Frozen):
    key: str = ""
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' ``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        # Equal with an empty key only matches taints with an empty key.
        return self.key == taint.key and self.value == taint.value


def untolerated(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> list[Taint]:
    """Taints with a scheduling effect that no toleration covers."""
    return [
        t
        for t in taints
        if t.blocks_scheduling and not any(tol.tolerates(t) for tol in tolerations)
    ]


class Requirement(Frozen):
    """One match expression of a label selector or node selector term."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()

    def matches(self, labels: Labels) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator == "In":
            return present and value in self.values
        if self.operator == "NotIn":
            return not present or value not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        # Gt / Lt compare integers; a non-integer label never matches.
        try:
            lhs, rhs = int(value), int(self.values[0])
        except (ValueError, IndexError):
            return False
        return present and (lhs > rhs if self.operator == "Gt" else lhs < rhs)


class LabelSelector(Frozen):
    """metav1.LabelSelector; the empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Labels) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        return all(r.matches(labels) for r in self.match_expressions)


class NodeSelectorTerm(Frozen):
    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def matches(self, labels: Labels, node_name: str | None = None) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False  # an empty term matches no node (Kubernetes semantics)
        if not all(r.matches(labels) for r in self.match_expressions):
            return False
        if self.match_fields:
            fields = {"metadata.name": node_name} if node_name is not None else {}
            return all(r.matches(fields) for r in self.match_fields)
        return True


class PodPlacement(Frozen):
    """What a pod template says about where it may run."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()

    def matches_node(self, labels: Labels, node_name: str | None = None) -> bool:
        """Full nodeSelector and required affinity, as kube-scheduler checks."""
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        if self.required_terms is None:
            return True
        return any(t.matches(labels, node_name) for t in self.required_terms)

    def matches_flavor(self, flavor_labels: Labels) -> bool:
        """Kueue's flavor affinity check (kueue-semantics §4.2 rule 3).

        Only keys the flavor defines are considered; a term that loses all
        its expressions disables the whole affinity check.
        """
        for key, value in self.node_selector:
            if key in flavor_labels and flavor_labels[key] != value:
                return False
        if self.required_terms is None:
            return True
        reduced = []
        for term in self.required_terms:
            exprs = tuple(r for r in term.match_expressions if r.key in flavor_labels)
            if not exprs:
                return True
            reduced.append(exprs)
        return any(all(r.matches(flavor_labels) for r in exprs) for exprs in reduced)


# -- Raw JSON entries: the emulator and the sidecar read API objects as dicts.

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


def raw_tolerates(
    tolerations: Sequence[Mapping[str, object]], taint: Mapping[str, object]
) -> bool:
    """``Toleration.ToleratesTaint`` for any of raw ``tolerations``."""
    t = Taint(
        key=str(taint.get("key") or ""),
        value=str(taint.get("value") or ""),
        effect=str(taint.get("effect") or ""),
    )
    return any(
        Toleration(
            key=str(tol.get("key") or ""),
            operator="Exists" if tol.get("operator") == "Exists" else "Equal",
            value=str(tol.get("value") or ""),
            effect=str(tol.get("effect") or ""),
        ).tolerates(t)
        for tol in tolerations
    )


def raw_requirement(expr: Mapping[str, object]) -> Requirement | None:
    """A raw match expression; None for an operator Kubernetes does not have."""
    op = expr.get("operator")
    if op not in _OPERATORS:
        return None
    values = expr.get("values") or []
    return Requirement(
        key=str(expr.get("key")),
        operator=op,
        values=tuple(str(v) for v in values) if isinstance(values, list) else (),
    )
