"""The command-line interface: thin Typer wiring over the library."""
