"""File helpers: atomic writes (the one home of temp + fsync + rename) and the crash points the crash tests use."""
