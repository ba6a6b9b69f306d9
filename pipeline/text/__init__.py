"""Text: shell command splitting, UTF-8 buffers, output tails and the SWE-smith id grammar."""
