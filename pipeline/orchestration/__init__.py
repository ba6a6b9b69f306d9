"""Running the pipeline: per-unit work (process), the driver (runner), trajpipe convert, progress."""
