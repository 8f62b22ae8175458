"""The search: warm start, the lexicographic stages and what races them (the
prover, the rack search, HiGHS), and the relaxed model's ceilings."""
