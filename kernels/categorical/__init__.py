"""The categorical rating model (MODEL.md, "Ratings with more than two classes, and several
judges"): K classes with values v, J judges each answering in the K classes, a confusion
matrix C in place of (ρ, η), and θ = vᵀπ as the estimand. Binary ratings are its case
K = 2, J = 1 (:func:`counts.binary_counts`).
"""
