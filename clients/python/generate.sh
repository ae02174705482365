#!/bin/bash
# clients/python/generate.sh [--check]
#
# Regenerates the Python stubs of subnet.v1 checked in under
# clients/python/subnetd_client/_gen/ from schema/subnet/v1/subnet.proto
# (run it from anywhere after changing the proto, and commit the result):
#
#   clients/python/generate.sh
#
# --check generates into a temp dir instead and exits 1 with the difference
# when the checked-in stubs are not what the schema gives (ctest
# python_client_stubs_current runs it, so a schema change without
# regenerating fails CI).
#
# Needs protoc and grpc_python_plugin (Debian 12: protobuf-compiler,
# protobuf-compiler-grpc), found on PATH or through $PROTOC and
# $GRPC_PYTHON_PLUGIN. The stubs are checked in because a management node
# that installs the client has neither. Stubs from protoc 3.21 (Debian 12)
# load with python3-protobuf 3.21 (module version 4.21); a newer protoc
# writes code that needs a newer runtime, so regenerate with Debian's.
#
# The import root is schema/, so the descriptor keeps its name
# "subnet/v1/subnet.proto" (as in the C++ server and its reflection). The
# generated code assumes `subnet.v1` is a top-level package; two lines are
# rewritten so the stubs live inside subnetd_client instead:
#   subnet_pb2_grpc.py  `from subnet.v1 import subnet_pb2 ...`
#                    -> `from . import subnet_pb2 ...` (a relative import)
#   subnet_pb2.py       the module name given to the message classes
#                       ('subnet.v1.subnet_pb2') -> __name__, so their
#                       __module__ names a module that exists (pickle).
# Each rewrite must match exactly once; a protoc that writes something else
# fails here instead of leaving a stub that imports the wrong module.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
schema=$repo/schema
protos=(subnet/v1/subnet.proto)
dest=$here/subnetd_client/_gen
protoc=${PROTOC:-protoc}
plugin=${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin || true)}

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

command -v "$protoc" >/dev/null ||
  { echo "generate.sh: no protoc (apt-get install protobuf-compiler, or set PROTOC)" >&2; exit 2; }
if [ -z "$plugin" ] || [ ! -x "$plugin" ]; then
  echo "generate.sh: no grpc_python_plugin (apt-get install protobuf-compiler-grpc," \
       "or set GRPC_PYTHON_PLUGIN)" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/subnetd_pygen.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=$work/_gen
mkdir -p "$out"

"$protoc" --proto_path="$schema" --python_out="$out" --pyi_out="$out" \
  --grpc_python_out="$out" --plugin=protoc-gen-grpc_python="$plugin" "${protos[@]}"

# rewrite FILE FROM TO: replaces the line FROM (exactly once) by TO.
rewrite() {
  local file=$1 from=$2 to=$3 n
  n=$(grep -cxF -- "$from" "$file" || true)
  if [ "$n" != 1 ]; then
    echo "generate.sh: expected one line '$from' in ${file#"$out"/}, found $n;" \
         "the protoc output changed, update the rewrite" >&2
    exit 1
  fi
  awk -v from="$from" -v to="$to" '$0 == from { print to; next } { print }' "$file" > "$file.new"
  mv "$file.new" "$file"
}

for proto in "${protos[@]}"; do
  stem=${proto%.proto}
  module=${stem//\//.}_pb2
  name=$(basename "$stem")
  rewrite "$out/${stem}_pb2_grpc.py" \
    "from ${module%.*} import ${name}_pb2 as ${stem//\//_dot_}__pb2" \
    "from . import ${name}_pb2 as ${stem//\//_dot_}__pb2"
  rewrite "$out/${stem}_pb2.py" \
    "_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, '$module', globals())" \
    "_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, __name__, globals())"
  # Every directory on the way is a package.
  dir=$(dirname "$stem")
  while [ "$dir" != . ]; do
    touch "$out/$dir/__init__.py"
    dir=$(dirname "$dir")
  done
done

version=$("$protoc" --version)
cat > "$out/__init__.py" <<EOT
"""subnet.v1 stubs, generated from schema/ by clients/python/generate.sh with
$version and grpc_python_plugin. Do not edit: change the proto and rerun
clients/python/generate.sh."""
EOT

if [ "$check" = 1 ]; then
  if diff -ru -x __pycache__ "$dest" "$out" > "$work/diff"; then
    echo "generate.sh: the stubs in clients/python/subnetd_client/_gen match schema/"
    exit 0
  fi
  cat "$work/diff"
  echo
  echo "FAIL: the Python stubs in clients/python/subnetd_client/_gen are not what" \
       "schema/ gives (diff above: checked in -> generated now)."
  echo "Regenerate them and commit the result: clients/python/generate.sh"
  exit 1
fi

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
cp -r "$out" "$dest"
echo "generate.sh: wrote $(cd "$dest" && find . -type f | sort | sed 's|^\./||' | tr '\n' ' ')"
