"""The work dir's store: its state (units, held runs, commits), the ledger and a row's publishing size."""
