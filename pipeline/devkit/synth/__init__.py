"""The synthetic corpus (trajpipe synth): test and demo tooling, not a source. Imported lazily."""
