# The commands people, the README and CI all run.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: install node run test test-sqlite test-postgres lint format bench bench-guard clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The caldav client (tests) needs niquests, whose urllib3-future would otherwise replace
	# urllib3 in the virtualenv (its .pth file copies itself over it) and break requests, which
	# schemathesis uses: built from source with URLLIB3_NO_OVERRIDE, the two live side by side.
	URLLIB3_NO_OVERRIDE=1 $(BIN)/python -m pip install --quiet --no-binary urllib3-future -e '.[test,bench]'
	# The tests' outside reader of the iCalendar feed, and the CalDAV client the tests drive
	# the server with (it needs the reader) and its compatibility checker. Without their dependencies: the reader pins
	# python-dateutil<3, and the service needs 4.0 (earlier versions could hang); both run on
	# 4.0. The client's other dependencies are in the test extra.
	$(BIN)/python -m pip install --quiet --no-deps 'recurring-ical-events>=3.8,<4' 'x-wr-timezone>=2,<3' \
		'caldav>=3.6,<4' 'icalendar-searcher>=1.3,<2' 'calendaring-config>=0.5,<1' \
		'caldav-server-tester>=1.7,<2'
	touch $(STAMP)

# The tests' node packages, pinned in package-lock.json: the feed's two JavaScript readers
# (ical.js, node-ical; tests/rest/ical/test_feed_readers.py) and the OpenAPI linters. Only the test
# and lint targets need them (make run does not); without npm, nothing is installed here.
node_modules/.package-lock.json: package-lock.json
	if command -v npm >/dev/null 2>&1; then npm ci --ignore-scripts --no-audit --no-fund --loglevel=error; fi

node: node_modules/.package-lock.json

install: $(STAMP)

## Set up, create a demo owner and key (printed), and serve on http://$(HOST):$(PORT)
## (127.0.0.1:8000 unless given: make run PORT=9101)
run: install
	$(BIN)/calendar-service demo --host $(HOST) --port $(PORT)
	$(BIN)/calendar-service serve --host $(HOST) --port $(PORT)

## Set up and run lint plus the whole suite on SQLite and (if reachable) PostgreSQL
test: install node
	scripts/test

test-sqlite: install node
	scripts/test --sqlite-only

lint: install node
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	scripts/lint-openapi

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install
	$(BIN)/python -m bench

## Instructions per list and per create (callgrind) against bench/budget.json; fails past +5 %
bench-guard: install
	$(BIN)/python -m bench.floor --check

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info
