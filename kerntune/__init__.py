"""kerntune: an agentic GPU kernel tuner.

Semantics-preserving templates (from an LLM or a built-in rule catalog) plus
measured, resource-constrained parameter search, with every candidate verified
against the original kernel before it may be called faster.
"""

__version__ = "0.1.0"
