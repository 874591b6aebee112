"""The pytest face, the only package besides suites/ that imports pytest: the hooks (hooks.py, the entry point), the run's
state (session.py), the markers, the fixtures every suite needs, and the hooks other plugins implement."""
