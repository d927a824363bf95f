#!/usr/bin/env bash
# Installs what tests/kms_aws.rs needs, into target/kms/ of this checkout: a Python venv with
# moto's server (`moto_server`, an AWS-KMS-compatible server) from PyPI, with only the services
# the tests use (`moto[kms,iam,sts]`) and the web framework of its server mode (flask and
# flask-cors) rather than `moto[server]`'s every service (about half the disk and time), and
# boto3, which moto brings.
#
# Idempotent: a second run checks the version and installs only when it differs. The last
# thing it does is write target/kms/ready, which the tests look for. Needs python3 (with venv).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${KWIRE_KMS_DIR:-$root/target/kms}
moto=${MOTO_VERSION:-5.2.6}
flask=${FLASK_VERSION:-3.1.3}
flask_cors=${FLASK_CORS_VERSION:-6.0.5}

say() { echo "kms setup: $*"; }
mkdir -p "$dir"
rm -f "$dir/ready"

venv=$dir/venv
want="moto==$moto flask==$flask flask-cors==$flask_cors"
have=$("$venv/bin/python" - <<'PY' 2>/dev/null || true
from importlib.metadata import version
print(f"moto=={version('moto')} flask=={version('flask')} flask-cors=={version('flask-cors')}")
PY
)
if [ "$have" != "$want" ] || [ ! -x "$venv/bin/moto_server" ]; then
  say "python venv with $want"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "moto[kms,iam,sts]==$moto" "flask==$flask" "flask-cors==$flask_cors"
else
  say "moto ready ($have)"
fi

"$venv/bin/python" - >"$dir/versions.txt" <<'PY'
from importlib.metadata import version
for p in ("moto", "boto3", "botocore", "flask", "flask-cors", "cryptography"):
    print(p, version(p))
PY
cp "$dir/versions.txt" "$dir/ready"
say "ready:"
sed 's/^/  /' "$dir/ready"
