"""Running a planned run: the runner, the writer, scoring, judging, resume and the worker jobs."""
