"""One run without pytest: the options table and frozen Settings, where the data files live, one cluster shared by
pytest-xdist workers, and what the run cost the cluster."""
