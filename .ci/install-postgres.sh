#!/usr/bin/env bash
# What the cluster tests (tests/test_distributed.py, make test-full) need from Debian: PostgreSQL's
# server binaries (/usr/lib/postgresql/*/bin/initdb), installed only when missing. The tests start a
# throwaway cluster of their own, so the package must not start the system one: service starts are
# forbidden while it installs. Idempotent and quiet.
set -euo pipefail

ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "install-postgres.sh: installing postgresql"
policy=/usr/sbin/policy-rc.d
created=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
	$sudo chmod 755 "$policy"
	created=1
fi
trap 'if [ "$created" -eq 1 ]; then $sudo rm -f "$policy"; fi' EXIT
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq postgresql >/dev/null
ls /usr/lib/postgresql/*/bin/initdb
