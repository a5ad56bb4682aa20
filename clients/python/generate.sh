#!/usr/bin/env bash
# Regenerates the gRPC stubs in src/cellar/_proto/ from the repository's
# proto/cellar/v1/cellar.proto with grpcio-tools, then points the generated service module's
# import of the messages at the package (protoc writes `from cellar.v1 import ...`, a module
# path that does not exist inside the `cellar` package).
#
# Usage: generate.sh [OUT_DIR]   (default: src/cellar/_proto next to this script)
# PYTHON selects the interpreter that has grpcio-tools (default: python3).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
out="${1:-$here/src/cellar/_proto}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$python" -m grpc_tools.protoc -I "$repo/proto" \
    --python_out="$tmp" --pyi_out="$tmp" --grpc_python_out="$tmp" \
    "$repo/proto/cellar/v1/cellar.proto"

mkdir -p "$out"
for f in cellar_pb2.py cellar_pb2.pyi cellar_pb2_grpc.py; do
    cp "$tmp/cellar/v1/$f" "$out/$f"
done
sed -i 's/^from cellar\.v1 import cellar_pb2 as /from . import cellar_pb2 as /' "$out/cellar_pb2_grpc.py"
if grep -q '^from cellar\.v1' "$out"/*.py; then
    echo "generate.sh: an import of cellar.v1 is left in $out" >&2
    exit 1
fi
cat > "$out/__init__.py" <<'PY'
"""Stubs generated from proto/cellar/v1/cellar.proto by clients/python/generate.sh; do not edit."""
PY
