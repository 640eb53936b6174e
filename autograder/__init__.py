"""Transformer building blocks, by hand: the course's grading machinery."""

import sys

# jsonschema imports `rfc3987_syntax` (jupyter-events pulls it in as `jsonschema[format-nongpl]`)
# when it is first imported, and that package compiles about 35 Earley grammars on import: 2-3 s of
# CPU in every process that imports nbformat, which is every grading worker and every CLI run.
# It only serves the "iri" formats of a FormatChecker; nbformat validates without one, and nothing
# the grader runs checks formats. jsonschema treats the package as optional (an ImportError means
# "no iri checker"), so a None entry in sys.modules skips it. Nothing changes in a process where
# jsonschema was imported already (a Jupyter server that imports the grader, say).
# python-jsonschema/jsonschema#1428 and #1521 are the upstream threads.
if "jsonschema" not in sys.modules:
    sys.modules.setdefault("rfc3987_syntax", None)
