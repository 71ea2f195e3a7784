"""The tuning stage: templates with explicit parameter spaces, feasibility
pruning, search strategies, persistent resumable runs."""
