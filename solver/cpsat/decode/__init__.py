"""From solver values back to a plan: decisions, placements, and the finish
(fill what still fits, say why the rest waits), the report per tier."""
