"""The verify step's view of the run's files: the tracker and the edit runner live in
:mod:`pipeline.convert.runfiles` (one home, shared with the return-code rules)."""

from pipeline.convert.runfiles import (
    Files,
    Outcome,
    created_file,
    edit_script,
    read_only,
    run_edit,
    whole_display,
)

__all__ = ["Files", "Outcome", "created_file", "edit_script", "read_only", "run_edit", "whole_display"]
