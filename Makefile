# The two commands of the README. Each does every set-up step itself.
.PHONY: serve test test-pg lint

serve:
	@scripts/bootstrap
	.venv/bin/evalsite serve

test:
	@scripts/system-deps
	@scripts/bootstrap dev
	.venv/bin/python -m pytest -q

# The database tests again, on PostgreSQL with the Redis broker (CI's second leg).
test-pg:
	@scripts/bootstrap dev
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} \
	EVALSITE_REDIS_URL=$${EVALSITE_REDIS_URL:-redis://127.0.0.1:6379/0} \
	.venv/bin/python -m pytest -q -m "not browser" tests --ignore=tests/core

lint:
	@scripts/bootstrap dev
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
