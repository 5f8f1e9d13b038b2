"""npas's benchmarks: each module a script that measures one thing and writes its table to
``benchmarks/results/`` (``python -m benchmarks.NAME`` or ``python benchmarks/NAME.py``, as the
tables cite them). A package so that the scripts share by name what they share: ``stats``
(the statistics every table states), the data generators (``generated_images``,
``generated_signals``, ``unaided_data``) and the arms one script reuses from another
(``leaderboard`` for ``record_designs`` and ``finalists``). Each script's metric has a
known-answer test in ``tests/benchmarks_tests/``."""
