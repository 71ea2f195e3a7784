"""Training data from optimize runs: verified slow -> fast pairs (`pairs.py`) and rewrite traces (`traces.py`)."""
