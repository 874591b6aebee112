"""What every layer may use: errors, input checks, versions, waiting."""
