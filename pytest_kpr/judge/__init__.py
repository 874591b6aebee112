"""Pure judgements, one module per property: an observation (its type defined beside the judge) and a sourced rule in,
the list of problems out (empty = the property holds)."""
