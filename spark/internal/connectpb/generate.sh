#!/usr/bin/env bash
# Generates this package's Go code from Spark Connect's published protos
# (proto/spark/connect/*.proto, copied unchanged from the
# spark-connect_2.13-4.2.0.jar that the pyspark 4.2.0 wheel carries, less
# example_plugins.proto; the two well-known types they import are under
# proto/google/protobuf, include only), with protoc and the repository's pinned plugins in
# .tmp/bin (make plugins). Run from anywhere. With an argument, the code is
# written into that folder instead (make checkgenerate compares it with
# this package's).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
pkg=github.com/sluicefeed/sluice/spark/internal/connectpb
out=$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)
cd "$here/proto"
files=(spark/connect/*.proto)
m=()
for f in "${files[@]}"; do m+=("M$f=$pkg;connectpb"); done
goopt=$(IFS=,; echo "paths=source_relative,${m[*]}")
[ "$out" != "$here" ] || rm -f "$here"/*.pb.go
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${PROTOC:-protoc} -I . \
	--plugin=protoc-gen-go="$root/.tmp/bin/protoc-gen-go" \
	--plugin=protoc-gen-go-grpc="$root/.tmp/bin/protoc-gen-go-grpc" \
	--go_out="$tmp" --go_opt="$goopt" \
	--go-grpc_out="$tmp" --go-grpc_opt="$goopt" \
	"${files[@]}"
mv "$tmp"/spark/connect/*.go "$out/"
