"""Reports of run directories (`kerntune report`): load a run (load.py,
load_optimize.py), draw its figures (plots.py), and write report.md
(markdown.py) and a self-contained report.html (html.py); build.py ties
them together."""
