"""The ground floor: the run model, the config, the stage names and order. Imports nothing above it."""
