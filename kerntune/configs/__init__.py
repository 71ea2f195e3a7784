"""Device profiles, search and LLM settings shipped with kerntune (installed as ``kerntune.configs``)."""
