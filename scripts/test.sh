#!/usr/bin/env bash
# Every test: the Rust workspace (unit, model-based, crash, fault-injection, corruption, CLI,
# server, benchmark smoke), then the Python suites against a real `cellar serve` (happybase
# through the Thrift gateway, the Python gRPC client) and the status page in headless
# Chromium. Installs what is missing: Chromium and fio (apt-get; fio measures the device
# ceiling in the elliptics smoke test) and a virtualenv with happybase,
# grpcio, pytest and SeaweedFS (`weed`, for the object-store tests) (target/py-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v fio >/dev/null 2>&1 || need_apt+=(fio)
if ((${#need_apt[@]})); then
    echo "installing ${need_apt[*]} (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
fi

venv=target/py-venv
stamp="$venv/.requirements"
if ! cmp -s tests/python/requirements.txt "$stamp" 2>/dev/null; then
    echo "setting up $venv (pip)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip >&2
    "$venv/bin/pip" install -q -r tests/python/requirements.txt >&2
    cp tests/python/requirements.txt "$stamp"
fi
"$venv/bin/pip" install -q ./clients/python >&2

cargo build --release -p cellar-cli
export CELLAR_BIN="$PWD/target/release/cellar"
export CHROMIUM_BIN="$(command -v chromium)"
export WEED_BIN="$PWD/$venv/bin/weed"

# The workspace build has cellar-engine's `object-store` feature (cellar-cli and
# cellar-bench enable it), so this runs the object-store tests on SeaweedFS too.
cargo test --workspace --release
"$venv/bin/python" -m pytest -q tests/python clients/python/tests
