# The two commands of the README. Each does every set-up step itself.
.PHONY: serve test test-pg lint

# `make serve PORT=8123 HOST=0.0.0.0`: read from make's command line only, never from the
# environment, where HOST is often the machine's name (tcsh sets it) and PORT another app's.
# It installs the mcp extra too, so `.venv/bin/evalsite mcp` (and .mcp.json) works after it.
serve_host = $(if $(filter command line,$(origin HOST)), --host '$(HOST)')
serve_port = $(if $(filter command line,$(origin PORT)), --port '$(PORT)')

serve:
	@scripts/bootstrap mcp
	.venv/bin/evalsite serve$(serve_host)$(serve_port)

# The tests keep their compiled bytecode even where the environment says not to write it
# (PYTHONDONTWRITEBYTECODE): without it every worker and every `evalsite` a test starts
# compiles the project again (about 0.2 s a start, and pytest's assertion rewriting of every
# test module in each worker). Two workers a core: a browser test waiting on a page, or a test
# waiting on a server's latency, leaves its core to another worker (the parallel pass in 0.85
# of the time of one a core, measured idle on this 2-core machine). The tests that need the
# machine to themselves are marked `serial` and run after it, alone.
pytest = env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest
workers = $(shell echo $$(( 2 * $$(nproc) )))

# The files that hold `serial` tests: collecting only those, not the whole suite, spares the
# serial pass about 7 s. tests/helpers/plugin.py refuses a `serial` test whose file does not
# say `mark.serial`, which this list would miss.
serial_files = $(shell grep -rlE 'mark\.serial' tests --include='test_*.py' | sort)

# In parallel (pytest-xdist, a test file's tests on one worker; each worker has its own data
# dir: tests/helpers/plugin.py), then the `serial` tests alone.
test:
	@scripts/system-deps
	@scripts/bootstrap dev
	$(pytest) -q -n $(workers) --dist loadfile -m "not serial"
	$(pytest) -q -m serial $(serial_files)

# The database tests again, on PostgreSQL with the Redis broker (CI's second leg), then the
# multi-host soak's bounded form (tests/ops/test_soak.py, docs/scale-out.md: about 3 minutes).
test-pg:
	@scripts/bootstrap dev
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} \
	EVALSITE_REDIS_URL=$${EVALSITE_REDIS_URL:-redis://127.0.0.1:6379/0} \
	$(pytest) -q -n $(workers) --dist loadfile \
	  -m "not browser and not soak and not serial" tests --ignore=tests/core
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} \
	EVALSITE_REDIS_URL=$${EVALSITE_REDIS_URL:-redis://127.0.0.1:6379/0} \
	$(pytest) -q -m "serial and not browser and not soak" $(filter-out tests/core/%,$(serial_files))
	EVALSITE_SOAK=1 $(pytest) -q -m soak tests/ops/test_soak.py

# mypy with django-stubs: strict on evalsite/core, check_untyped_defs elsewhere (pyproject.toml).
# Its Django plugin loads the settings, which make a data dir: one beside mypy's cache, never
# the one `make serve` uses.
lint:
	@scripts/bootstrap dev
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
	EVALSITE_DATA_DIR=.mypy_cache/evalsite-data PYTHONPATH=. .venv/bin/mypy
