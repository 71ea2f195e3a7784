"""Kernel source code: parsing with tree-sitter's CUDA grammar, and analysis."""
