"""Suites: many PDEs in one command (``pdesharp suite``).

* :mod:`.cases` reads a suite folder (case folders: task.yaml + reference data, or a built-in
  task's name), trusting nothing in it; :mod:`.names` is the one check of a name that becomes
  part of a path.
* :mod:`.run` runs every case with every method at the same budget, resumably (each case is a
  `pdesharp bench` of its one task), into one results store (:mod:`.results`), and writes the
  table with Pass@1e-2/1e-3/1e-4 and an HTML page (:mod:`.page`); :mod:`.ray_cases` sends
  whole cases to the workers of a Ray cluster.
* :mod:`.importers` turn public benchmarks into suite folders: PDEAgent-Bench's JSONL records,
  CodePDE's five tasks, APEBench's scenarios (when its library is installed).

See docs/suites.md.
"""
