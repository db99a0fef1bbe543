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
# of the time of one a core, measured idle on this 2-core machine). The tests of real worker
# processes (marked `processes`) and those that need the machine to themselves (`serial`) run
# after it.
pytest = env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest
workers = $(shell echo $$(( 2 * $$(nproc) )))

# The passes after the parallel one collect only the files that hold their tests (a grep for
# `mark.processes`, `mark.serial`), not the whole suite: about 7 s each. tests/helpers/plugin.py
# refuses a test so marked whose file does not say so, which these lists would miss.
process_files = $(shell grep -rlE 'mark\.processes' tests --include='test_*.py' | sort)
serial_files = $(shell grep -rlE 'mark\.serial' tests --include='test_*.py' | sort)

# In parallel (pytest-xdist, a test file's tests on one worker; each worker has its own data
# dir: tests/helpers/plugin.py); then the tests of real worker processes, signals and kills,
# which mostly wait on leases and grace periods, a file a core; then the `serial` tests
# (cgroups, memory bounds, fork bombs) alone.
test:
	@scripts/system-deps
	@scripts/bootstrap dev
	$(pytest) -q -n $(workers) --dist loadfile -m "not processes and not serial"
	$(pytest) -q -n $$(nproc) --dist loadfile -m processes $(process_files)
	$(pytest) -q -m serial $(serial_files)

# The database tests again, on PostgreSQL with the Redis broker (CI's second leg), then the
# multi-host soak's bounded form (tests/ops/test_soak.py, docs/scale-out.md: about 3 minutes).
test-pg:
	@scripts/bootstrap dev
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} \
	EVALSITE_REDIS_URL=$${EVALSITE_REDIS_URL:-redis://127.0.0.1:6379/0} \
	$(pytest) -q -n $(workers) --dist loadfile \
	  -m "not browser and not soak and not processes and not serial" tests --ignore=tests/core
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} \
	EVALSITE_REDIS_URL=$${EVALSITE_REDIS_URL:-redis://127.0.0.1:6379/0} \
	$(pytest) -q -n $$(nproc) --dist loadfile -m "processes and not browser and not soak" \
	  $(filter-out tests/core/%,$(process_files))
	EVALSITE_SOAK=1 $(pytest) -q -m soak tests/ops/test_soak.py

# mypy with django-stubs: strict on evalsite/core, check_untyped_defs elsewhere (pyproject.toml).
# Its Django plugin loads the settings, which make a data dir: one beside mypy's cache, never
# the one `make serve` uses.
lint:
	@scripts/bootstrap dev
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
	EVALSITE_DATA_DIR=.mypy_cache/evalsite-data PYTHONPATH=. .venv/bin/mypy
