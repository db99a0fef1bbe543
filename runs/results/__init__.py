"""Reading a run: reports, calibration, the per-case diff, exports, progress and listings."""
