"""Reference data the stages check against: benchmark tables and secret detection rules."""
