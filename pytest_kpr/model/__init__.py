"""Frozen types shared down the pipeline, defined once: the probe result (made by traffic, read back by parse), and the
observation types of the properties whose suites hand them to their judges (hairpin)."""
