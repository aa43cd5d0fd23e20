#!/usr/bin/env bash
# Run a command with no network but loopback, enforced by the kernel: a new network namespace (unshare --net, as the
# mapped root of a new user namespace) whose only interface is lo. The loopback guard in the gateway reports what
# tried to get out; this makes sure nothing could. Example:
#   tools/e2e/offline.sh .venv/bin/python -m pytest -m e2e tests/e2e
# Needs util-linux `unshare`, iproute2 `ip` and unprivileged user namespaces (or root).
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi
exec unshare --net --map-root-user -- sh -c 'ip link set lo up && exec "$@"' offline "$@"
