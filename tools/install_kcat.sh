#!/usr/bin/env bash
# Installs kcat (librdkafka's command-line tool, Debian package `kcat`) for the
# conformance suite's kcat driver. Idempotent: does nothing when kcat is on PATH.
set -euo pipefail

if command -v kcat >/dev/null 2>&1; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

echo "[install_kcat] kcat missing: apt-get install -y kcat" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet (or stale ones): update, then install.
if ! $SUDO apt-get install -y -q kcat >/dev/null 2>&1; then
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q kcat >/dev/null
fi
command -v kcat >/dev/null 2>&1 || { echo "[install_kcat] kcat still missing" >&2; exit 1; }
echo "[install_kcat] installed: $(kcat -V 2>&1 | head -1)" >&2
