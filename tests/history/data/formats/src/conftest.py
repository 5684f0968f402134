# test_pybench.py is the source of pytest_benchmark.json (run with pytest-benchmark in a separate venv),
# not a test of quiho: the suite does not collect it.
collect_ignore = ["test_pybench.py"]
