"""Each judge's table test, one module per module of pytest_kpr/judge/ (tests/test_layers.py holds every judge to it),
and test_messages.py, whole messages across judges. A package, so that tests/judge/test_<p>.py and suites/test_<p>.py
are different modules."""
