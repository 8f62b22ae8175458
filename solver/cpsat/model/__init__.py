"""The CP model: variables, constraints, the staged objective, and what they
are built from (placement, fairness, admission fair sharing)."""
