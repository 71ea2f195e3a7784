"""The CI regression gate: ``kerntune regress`` (see docs/ci.md)."""
