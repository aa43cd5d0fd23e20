# Thin wrapper: everything real lives in eventlog/ and tools/. Versions, the cache and Node's path come from
# eventlog/toolchain.py (stdlib only, so it runs before the venv exists); set EVENTLOG_CACHE to move the cache.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
comma := ,
# NODE_VERSION NODE_PKG NODE_DIR NODE NODE_BIN_DIR NODE_STAMP OPENCLAW_VERSION OPENCLAW_PREVIOUS OPENCLAW_RELEASES
# OPENCLAW_PREFIX OPENCLAW_DIR OPENCLAW_STAMP CACHE WHEELHOUSE
TOOLCHAIN := $(shell $(PY) -m eventlog.toolchain env)
ifeq ($(TOOLCHAIN),)
$(error python3 -m eventlog.toolchain failed)
endif
$(foreach kv,$(TOOLCHAIN),$(eval $(kv)))
RELEASES := $(subst $(comma), ,$(OPENCLAW_RELEASES))
export EVENTLOG_NODE := $(NODE)
export EVENTLOG_OPENCLAW_DIR := $(OPENCLAW_DIR)
RUNTIME := eventlog/patches/openclaw/runtime

.PHONY: venv node openclaw deps releases wheelhouse strace chromium postgresql lint test test-fast demo bench clean acorn mutate mutate-py mutate-js

# A stamp, not $(VPY): that is a symlink, and touching it would touch the interpreter it points to (so a changed
# pyproject.toml was never installed into an existing venv).
VSTAMP := $(VENV)/.installed
$(VSTAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -e '.[test,bench,lake]'
	touch $@

venv: $(VSTAMP)

# Stamped like openclaw below: a binary that failed its version check is not taken as installed next time.
$(NODE_STAMP):
	mkdir -p $(NODE_DIR)
	cd $(NODE_DIR) && npm install --no-audit --no-fund --loglevel=error --save-exact $(NODE_PKG)@$(NODE_VERSION)
	test "$$($(NODE) --version)" = "v$(NODE_VERSION)"
	touch $@

node: $(NODE_STAMP)

# npm runs with Node 26 first on PATH (openclaw's engines field refuses an older system Node).
$(OPENCLAW_STAMP): | $(NODE_STAMP)
	mkdir -p $(OPENCLAW_PREFIX)
	cd $(OPENCLAW_PREFIX) && PATH=$(NODE_BIN_DIR):$$PATH npm install --no-audit --no-fund --loglevel=error --save-exact openclaw@$(OPENCLAW_VERSION)
	test "$$($(NODE) -p 'require(process.argv[1]).version' $(OPENCLAW_DIR)/package.json)" = "$(OPENCLAW_VERSION)"
	touch $@

openclaw: $(OPENCLAW_STAMP)

deps: venv node openclaw

# Release tarballs (kept) and unpacked trees for the rebase and upgrade tests, and the previous release installed with
# its dependencies for `rebase --verify`; the tests never fetch.
releases: venv node
	PATH=$(NODE_BIN_DIR):$$PATH $(VPY) -m eventlog patch fetch $(OPENCLAW_VERSION) $(RELEASES) >/dev/null
	PATH=$(NODE_BIN_DIR):$$PATH $(VPY) -m eventlog patch fetch --install $(OPENCLAW_PREVIOUS) >/dev/null

# Wheels of every dependency (and setuptools), so the clean-venv install test builds and installs with --no-index.
# The `lake` extra's DuckDB extension wheels too: extensions cannot be downloaded here, and these wheels exist only
# for duckdb 1.5.5 (hence the pin), so `pip install --no-index '.[lake]'` from the wheelhouse works offline.
$(WHEELHOUSE)/.complete: pyproject.toml | $(VSTAMP)
	mkdir -p $(WHEELHOUSE)
	$(VPY) -m pip wheel -q --disable-pip-version-check -w $(WHEELHOUSE) '.[lake]' setuptools
	rm -f $(WHEELHOUSE)/openclaw_eventlog-*.whl
	touch $@

wheelhouse: $(WHEELHOUSE)/.complete

# The JS writer's durability tests watch its system calls with strace(1); prlimit(1) is util-linux (always there).
# Installed from the Debian/Ubuntu archive when missing (root); otherwise one line saying what to install.
strace:
	@command -v strace >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q strace >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q strace >/dev/null; }; }; } || \
	  { echo "make: the tests need strace(1): install it (apt-get install strace) and run again" >&2; exit 2; }

# The page's browser tests (tests/web/, marker `browser`) drive Debian's Chromium headless through Playwright, which is
# pointed at /usr/bin/chromium (no `playwright install`: that downloads a browser build). Installed like strace; both
# binaries are checked, since a machine may hold one without the other.
chromium:
	@{ [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }; }; } || \
	  { echo "make: the browser tests need Chromium: install it (apt-get install chromium chromium-driver) and run again" >&2; exit 2; }

# The lake's tests (tests/pg_support.py) start a throwaway PostgreSQL cluster (initdb on a temp dir, 127.0.0.1 only) from
# Debian's server binaries under /usr/lib/postgresql/<major>/bin; installed like strace when missing. The tests fail,
# never skip, without them.
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q postgresql >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null; }; }; } || \
	  { echo "make: the lake tests need the PostgreSQL server: install it (apt-get install postgresql) and run again" >&2; exit 2; }

# Two pytest workers (pytest-xdist, the `test` extra) for test-fast, whose tests share nothing across processes. `test`
# stays on one: its e2e tests share the session's gateways, and the grouping that would keep them on one worker
# (`--dist loadgroup`) is a no-op with xdist 3.8.0 under pytest 9.2 (docs/testing.md "Two workers").
PYTEST_WORKERS := -n 2

# Static checks first ([tool.mypy] and [tool.ruff] in pyproject.toml): a type error or a lint finding fails the target
# before the suite runs.
lint: venv
	$(VPY) -m mypy
	$(VPY) -m ruff check

# The node tests run with the venv first on PATH: the DLP twin tests start the project's Python (`python3 -c …`), which
# must be the venv's, not whatever python3 the machine has.
test: deps releases wheelhouse strace chromium postgresql acorn lint
	$(VPY) -m pytest -q
	PATH=$(CURDIR)/$(VENV)/bin:$(NODE_BIN_DIR):$$PATH $(NODE) --test $(RUNTIME)/test/

# Leaves out (docs/testing.md says so too): the pytest markers e2e (the real gateway), openclaw (reads/patches the
# installed openclaw package), slow (long, but guarding correctness: `test` runs them) and browser (the page in
# headless Chromium: `test` installs Chromium and runs them; here, no Chromium is needed). The node tests all run:
# tap.test.mjs needs grammY from the openclaw install (no gateway), hence `openclaw` here.
# The quick PostgreSQL-catalog tests run here too (one cluster per worker, ≈ 3 s to start), hence `postgresql`.
test-fast: venv node openclaw strace postgresql acorn lint
	$(VPY) -m pytest -q $(PYTEST_WORKERS) -m "not e2e and not slow and not openclaw and not browser"
	PATH=$(CURDIR)/$(VENV)/bin:$(NODE_BIN_DIR):$$PATH $(NODE) --test $(RUNTIME)/test/

# acorn parses for the JS mutant generator (docs/mutation-js.md); the suite tests the generator too, so `test` and
# `test-fast` install it. It goes into the cache like Node, never into the repo.
$(ACORN_STAMP): | $(NODE_STAMP)
	mkdir -p $(ACORN_DIR)
	cd $(ACORN_DIR) && PATH=$(NODE_BIN_DIR):$$PATH npm install --no-audit --no-fund --loglevel=error --save-exact acorn@$(ACORN_VERSION)
	touch $@

acorn: $(ACORN_STAMP)

# Default: every named mutant + every 8th generated mutant of each module (589 mutants, ~1.65 s CPU each: estimated
# 10-11 min on the quiet 2-core machine; the sampled scores' standard errors: docs/mutation-js.md "Run time (round 4)");
# all of them: make mutate-js MUTATE_JS_ARGS="--sample 1"
MUTATE_JS_ARGS ?= --sample 8 --jobs 4
mutate-js: node openclaw acorn
	nice -n 10 $(PY) tools/mutate/js.py $(MUTATE_JS_ARGS)

demo: deps
	$(VPY) tools/demo.py

bench: deps
	$(VPY) tools/bench/run.py

# Mutation testing of the Python DLP engine, writer and verify (not part of `make test`; docs/mutation.md). The tool's
# version is the pyproject.toml extra `mutate`, the modules and the test selection are [tool.mutmut] there.
# Node: the DLP conformance tests run the JS engine beside the mutated Python one.
mutate-py: venv node
	$(VPY) -m pip install -q --disable-pip-version-check -e '.[mutate]'
	PATH=$(NODE_BIN_DIR):$$PATH $(VPY) tools/mutate/run.py $(MUTATE_ARGS)

# Both (docs/mutation.md, docs/mutation-js.md); neither is part of `make test`. Ends with one per-module table of both
# halves and the wall time of each (tools/mutate/table.py, from build/mutation-py.json and build/mutation-js.json). The
# survivors' diffs are not on this timed path: afterwards, `.venv/bin/python tools/mutate/run.py --no-run --survivors`.
mutate: venv node openclaw acorn
	$(VPY) -m pip install -q --disable-pip-version-check -e '.[mutate]'
	rm -f build/mutation-py.json build/mutation-js.json
	PATH=$(NODE_BIN_DIR):$$PATH $(VPY) tools/mutate/run.py --json build/mutation-py.json $(MUTATE_ARGS); py=$$?; \
	nice -n 10 $(PY) tools/mutate/js.py --report build/mutation-js.json $(MUTATE_JS_ARGS); js=$$?; \
	$(PY) tools/mutate/table.py build/mutation-py.json build/mutation-js.json; \
	test $$py = 0 -a $$js = 0

clean:
	rm -rf $(VENV) build *.egg-info mutants
