"""The built-in rule catalog of `kerntune optimize`: semantics-preserving
rewrites of a kernel into a template. See docs/rules.md.

- base.py: the rule protocol, edits and the helpers rules share; catalog.py:
  applying the rules in order and assembling the template with its trace;
  access.py, block_ties.py, treecover.py: analyses the rules' preconditions use.
- One module per rule or family: macros.py (expand-macros), private.py
  (private-helpers), guardfirst.py (guard-first), launch.py (launch-config,
  launch-bounds), vcols.py (vector-columns), rowcolgrid.py (row-column-grid),
  rowloop.py (row-loop), groupsplit.py (split-groups), online.py
  (online-softmax), rows.py (cooperative-rows), vacc.py
  (vector-accumulators), shuffle.py (shuffle-reduction), atomics.py
  (privatize-atomics), ept.py (elements-per-thread), vectorize.py
  (vectorize), hoist.py (hoist-invariants), tanh.py (tanh-exp), generic.py
  (unroll, restrict, fast-math, compiler-flags).
"""
