"""Frozen types shared down the pipeline: what a producer makes and a reader parses, defined once."""
