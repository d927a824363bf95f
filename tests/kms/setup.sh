#!/usr/bin/env bash
# Installs what tests/kms_aws.rs needs, into target/kms/ of this checkout: a Python venv with
# moto's server (`moto[server]`, an AWS-KMS-compatible server) and boto3 (which it brings),
# from PyPI.
#
# Idempotent: a second run checks the version and installs only when it differs. The last
# thing it does is write target/kms/ready, which the tests look for. Needs python3 (with venv).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${KWIRE_KMS_DIR:-$root/target/kms}
moto=${MOTO_VERSION:-5.2.6}

say() { echo "kms setup: $*"; }
mkdir -p "$dir"
rm -f "$dir/ready"

venv=$dir/venv
have=$("$venv/bin/python" -c "from importlib.metadata import version; print(version('moto'))" 2>/dev/null || true)
if [ "$have" != "$moto" ] || [ ! -x "$venv/bin/moto_server" ]; then
  say "python venv with moto[server]==$moto"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==$moto"
else
  say "moto ready ($have)"
fi

"$venv/bin/python" - >"$dir/versions.txt" <<'PY'
from importlib.metadata import version
for p in ("moto", "boto3", "botocore", "flask", "cryptography"):
    print(p, version(p))
PY
cp "$dir/versions.txt" "$dir/ready"
say "ready:"
sed 's/^/  /' "$dir/ready"
