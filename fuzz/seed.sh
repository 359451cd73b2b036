#!/bin/sh
# Seeds the `read` fuzz corpus (fuzz/corpus/read, git-ignored) with the model
# fixtures and the small XAIF files of the reference material (found through
# XAIFB_SHARED, default ../shared beside the repository). Small seeds keep
# libFuzzer's executions fast; the reference files are copied, never
# committed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${XAIFB_SHARED:-$root/../shared}
out=$root/fuzz/corpus/read
mkdir -p "$out"
for f in "$root"/fixtures/model/*.xaif "$root"/fixtures/model/err/*.xaif; do
    cp "$f" "$out/fixture-$(basename "$f")"
done
if [ -d "$shared/xaif" ]; then
    find "$shared/xaif" -name '*.xaif' -size -6k | while read -r f; do
        rel=${f#"$shared"/}
        cp "$f" "$out/shared-$(echo "$rel" | tr / _)"
    done
else
    echo "seed.sh: no reference material at $shared; fixtures only" >&2
fi
echo "seeded $(ls "$out" | wc -l) files into $out"
