"""The maintainers' tooling: release, translations, the student wheel, execution, authoring, benchmarks."""
