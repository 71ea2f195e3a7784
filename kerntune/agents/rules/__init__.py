"""The built-in rule catalog of `kerntune optimize`: semantics-preserving
rewrites of a kernel into a template (base.py: the rule protocol and edits;
launch.py, generic.py, structural.py: the rules; catalog.py: applying them in
order and assembling the template with its trace). See docs/rules.md."""
