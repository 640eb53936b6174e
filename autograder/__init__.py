"""Transformer building blocks, by hand: the course's grading machinery."""
