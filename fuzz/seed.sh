#!/bin/sh
# Seeds the fuzz corpora (fuzz/corpus/*, git-ignored):
# - read: the model fixtures and the small XAIF files of the reference
#   material;
# - catalogue: the inlinable intrinsics catalogues (the reference one and
#   the test fixture's);
# - compare: pairs of Jacobian files of the corpus (ad.out and dd.out of one
#   example, joined by a NUL byte).
# The reference material is found through XAIFB_SHARED (default ../shared
# beside the repository). Small seeds keep libFuzzer's executions fast; the
# reference files are copied, never committed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${XAIFB_SHARED:-$root/../shared}
out=$root/fuzz/corpus/read
mkdir -p "$out" "$root/fuzz/corpus/catalogue" "$root/fuzz/corpus/compare"
for f in "$root"/fixtures/model/*.xaif "$root"/fixtures/model/err/*.xaif; do
    cp "$f" "$out/fixture-$(basename "$f")"
done
if [ -d "$shared/xaif" ]; then
    find "$shared/xaif" -name '*.xaif' -size -6k | while read -r f; do
        rel=${f#"$shared"/}
        cp "$f" "$out/shared-$(echo "$rel" | tr / _)"
    done
    cp "$shared/xaif/schema/examples/inlinable_intrinsics.xaif" "$root/fuzz/corpus/catalogue/"
    n=0
    for d in "$shared"/corpus/examples/*/; do
        if [ -f "$d/ad.out" ] && [ -f "$d/dd.out" ] && [ "$n" -lt 40 ]; then
            { cat "$d/ad.out"; printf '\000'; cat "$d/dd.out"; } > "$root/fuzz/corpus/compare/$(basename "$d")"
            n=$((n + 1))
        fi
    done
else
    echo "seed.sh: no reference material at $shared; fixtures only" >&2
fi
if [ -f "$root/fixtures/interp/catalogue_intrinsics.xaif" ]; then
    cp "$root/fixtures/interp/catalogue_intrinsics.xaif" "$root/fuzz/corpus/catalogue/"
fi
for t in read catalogue compare; do
    echo "seeded $(ls "$root/fuzz/corpus/$t" | wc -l) files into fuzz/corpus/$t"
done
