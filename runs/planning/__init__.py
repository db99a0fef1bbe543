"""Planning a run: from a suite file to a stored plan (issue 29's room; the planner,
estimates, validation and launch move in here with the house move)."""
