# GShare developer entrypoints. `make up` runs the platform; `make test` runs every check.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
FRONTEND := frontend
NODE_STAMP := $(FRONTEND)/node_modules/.installed
DEMO_VENV := .cache/demo/sessions
DEMO_STAMP := $(DEMO_VENV)/.installed

# podman's settings for the images and the Compose path (runc, no default ulimits).
export CONTAINERS_CONF := $(CURDIR)/hack/containers.conf

.PHONY: images compose-up smoke compose-down test-docker help up demo demo-deps helm-lint chart-crd reference-docs deploy-incluster prod-deploy install console test lint typecheck pytest frontend-test e2e-deps testenv bench bench-smoke openapi clean

help:
	@echo "make up        run GShare locally (console and API on http://localhost:$${GSHARE_PORT:-8000})"
	@echo "make test      install what the tests need and run them all"
	@echo "make demo      make up plus a simulated GPU cluster and its operator (needs Go)"
	@echo "make lint      ruff, mypy, import contracts and hadolint"
	@echo "make bench     run every benchmark in benchmarks/ at full size, checking its goal"
	@echo "make bench-smoke  run each benchmark once at a tiny size (part of make test)"
	@echo "make openapi   regenerate frontend/openapi.json and the console's API types"
	@echo "make images    build the four images (and Compose's PostgreSQL) with podman, as root"
	@echo "make compose-up / smoke / compose-down   the control plane in containers (compose.yaml)"
	@echo "make test-docker  the backend's and console's tests in throw-away containers"

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is needed")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	touch $@

install: $(STAMP)

$(NODE_STAMP): $(FRONTEND)/package.json $(FRONTEND)/package-lock.json
	cd $(FRONTEND) && npm ci --no-audit --no-fund
	touch $@

# The console is built again only when a source or a package of it is newer than the build.
CONSOLE := $(FRONTEND)/dist/index.html
CONSOLE_SOURCES := $(shell find $(FRONTEND)/src -type f) \
	$(wildcard $(FRONTEND)/index.html $(FRONTEND)/vite.config.ts $(FRONTEND)/tsconfig*.json) \
	$(FRONTEND)/package.json $(FRONTEND)/package-lock.json

$(CONSOLE): $(CONSOLE_SOURCES) $(NODE_STAMP)
	cd $(FRONTEND) && npm run build
	touch $@

console: $(CONSOLE)

up: install console
	$(BIN)/gshare up

# What `make up` runs, plus a GPU cluster and its operator, registered (needs Go), and nginx
# serving each session's page: a real pod on a real node where this machine can run one (root,
# hack/node.sh, `make images`), else a program on this host beside simulated nodes.
demo: install console demo-deps
	$(BIN)/python -m gshare.demo

# Debian's nginx (installed when missing, like Chromium), the session programs' own virtual
# environment, and what a real node needs from Debian (hack/node.sh; as root only).
demo-deps: $(DEMO_STAMP)
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null)
	@bash hack/node.sh

$(DEMO_STAMP): hack/demo-sessions.txt
	test -x $(DEMO_VENV)/bin/python || $(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install -q -r hack/demo-sessions.txt
	touch $@

openapi: install $(NODE_STAMP)
	$(BIN)/python -m gshare.api.openapi > $(FRONTEND)/openapi.json
	cd $(FRONTEND) && npm run gen:api

lint: install
	$(BIN)/ruff check src tests benchmarks hack test
	$(BIN)/ruff format --check src tests benchmarks hack test
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/hadolint build/images/*/Dockerfile build/images/base/*/Dockerfile

e2e-deps:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

frontend-test: $(NODE_STAMP)
	cd $(FRONTEND) && npm run typecheck && npm test

# etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kubectl and kwok, built from
# their Go modules once and cached under .cache/testenv (needs Go).
testenv:
	bash hack/testenv.sh

pytest: install console e2e-deps testenv demo-deps
	$(BIN)/pytest --durations=25

TEST_STAGES := lint frontend-test pytest bench-smoke helm-lint

# Each stage in turn, saying how long it took; the first that fails ends the run with its status.
test:
	@for stage in $(TEST_STAGES); do \
		start=$$SECONDS; \
		$(MAKE) --no-print-directory $$stage; status=$$?; \
		echo "stage $$stage took $$((SECONDS - start)) s"; \
		test $$status -eq 0 || exit $$status; \
	done

# The Helm chart: lint, render every overlay, a server-side dry run of every object against the
# test API server, then a real install and upgrade of the all-in-one (hack/helm_lint.py).
helm-lint: install testenv
	$(BIN)/python hack/helm_lint.py

# Install or upgrade GShare on the cluster KUBECONFIG points at, with helm built by testenv.
HELM = $$(bash hack/testenv.sh)/helm
deploy-incluster: testenv
	$(HELM) upgrade --install gshare charts/gshare --namespace default -f deploy/values/incluster.yaml

prod-deploy: testenv
	$(HELM) upgrade --install gshare charts/gshare --namespace default -f deploy/values/prod.yaml

# The pages in docs/reference/, from Settings and the error codes in src/gshare.
reference-docs: install
	$(BIN)/python hack/reference_docs.py

# The chart's copy of the GShareSession CRD, from the operator's definition.
chart-crd: install
	$(BIN)/python hack/render_crd.py

# Full size; each benchmark exits non-zero when it misses its goal.
BENCHMARKS := $(filter-out benchmarks/_%,$(wildcard benchmarks/*.py))

bench: install console testenv
	set -e; for script in $(BENCHMARKS); do echo "== $$script"; $(BIN)/python $$script; done

# Each benchmark once at a tiny size with no goal checked, so a benchmark that no longer runs
# fails `make test` instead of waiting for the next `make bench`.
# Every script in benchmarks/ takes part, so a new one cannot be left out.
bench-smoke: install console e2e-deps testenv
	set -e; for script in $(BENCHMARKS); do echo "== $$script --quick"; $(BIN)/python $$script --quick; done

# The images, from the release's Dockerfiles on a Debian base built here (hack/images.sh);
# podman, runc and debootstrap are installed when missing.
images:
	bash hack/images.sh

# PostgreSQL, the migrations, the API serving the console and the worker (compose.yaml), with
# .env written the first time; `make smoke` waits until the API is healthy and ready.
compose-up:
	bash hack/compose.sh up

smoke:
	bash hack/compose.sh smoke

# Stops everything and drops the volumes (the database and the data dir).
compose-down:
	bash hack/compose.sh down

# The backend's and the console's tests in throw-away containers (hack/test-docker.sh); the
# Kubernetes, image and browser tests stay in `make test`.
test-docker:
	bash hack/test-docker.sh

clean:
	rm -rf $(VENV) $(FRONTEND)/node_modules $(FRONTEND)/dist .pytest_cache .mypy_cache .ruff_cache
