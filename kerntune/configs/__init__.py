"""Data shipped with kerntune as package data: devices/ holds the stored GPU profiles."""
