"""cellsim's tooling: the ``cellsim`` command and what only commands use.

The top layer: it imports the simulator, the papers' software and the
experiments, and nothing below imports it (a package's own command, its
``cli.py``, takes :mod:`._outputs` and :mod:`.record` from here).

=========================  ===================================================================
module                     what
=========================  ===================================================================
:mod:`.cli`                the ``cellsim`` command (``run``, ``reproduce``, ``diff``, ...)
:mod:`.report`             ``cellsim reproduce``'s report.html and its verdicts
:mod:`.explanations`       the docs' sections that explain each experiment's results
:mod:`.validate_cli`       ``cellsim validate``: :mod:`cellsim.validate`'s scoreboard shown
:mod:`.bench`              ``cellsim bench``: the simulator's speed benchmarks
:mod:`.record`             ``--out DIR``: a record of a run, and ``cellsim diff``
:mod:`._outputs`           output paths and formats checked before a command runs
=========================  ===================================================================
"""
