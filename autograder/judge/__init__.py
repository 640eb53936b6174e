"""Deciding verdicts: one submission graded, its questions judged by the trusted checks."""
