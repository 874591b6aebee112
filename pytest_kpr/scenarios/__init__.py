"""Multi-step drivers, judged elsewhere: the shared-VIP scenario, upgrade gating (its judgements and its run)."""
