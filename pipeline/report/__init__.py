"""Reporting from the ledger: trajpipe audit (terminal, JSON, HTML)."""
