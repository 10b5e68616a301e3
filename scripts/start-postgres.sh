#!/usr/bin/env bash
# Start the Debian PostgreSQL cluster (no systemd here) and create the test role.
# Prints the SQLAlchemy URL the store tests use.
set -euo pipefail
# Only the URL goes to stdout: the tools below chatter ("Removed stale pid file.").
exec 3>&1 1>&2
version=$(ls /usr/lib/postgresql | sort -V | tail -n1)
if ! pg_lsclusters -h | awk '{print $4}' | grep -q online; then
  pg_lsclusters -h | grep -q "^$version main" || pg_createcluster "$version" main >/dev/null
  pg_ctlcluster --skip-systemctl-redirect "$version" main start 3>&-
fi
port=$(pg_lsclusters -h | awk '$4 == "online" {print $3; exit}')
for _ in $(seq 50); do
  su postgres -c "pg_isready -q -p $port" && break
  sleep 0.1
done
su postgres -c "psql -q -p $port -tc \"SELECT 1 FROM pg_roles WHERE rolname='bringup_test'\"" | grep -q 1 ||
  su postgres -c "psql -q -p $port -c \"CREATE ROLE bringup_test LOGIN SUPERUSER PASSWORD 'bringup_test'\""
echo "postgresql://bringup_test:bringup_test@127.0.0.1:$port/postgres" >&3
