"""The run model (raw runs, episodes, rows), the config and context, the work dir's state and the ledger."""
