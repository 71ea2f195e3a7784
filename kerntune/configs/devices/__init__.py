"""The stored GPU profiles, one YAML file each (package data; read by kerntune.hardware)."""
