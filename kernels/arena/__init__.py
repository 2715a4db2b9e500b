"""Battles between many systems (MODEL.md, "Battles: many systems from pairwise comparisons"):
their counts by cell, the Bradley–Terry–Davidson posterior with each judge's positional
confusion, and prediction-powered ranking."""
