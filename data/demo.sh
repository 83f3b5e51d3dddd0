#!/bin/sh
# svmtrain demo: check the sample, train, predict, certify, and round-trip a LIBLINEAR model.
# Run from the repository root (`make demo` does):
#   SVMTRAIN=.venv/bin/svmtrain SVMTOOLS=.venv/bin/svmtools sh data/demo.sh
# Writes only to a temporary directory, removed on exit.
set -eu

SVMTRAIN=${SVMTRAIN:-svmtrain}
SVMTOOLS=${SVMTOOLS:-svmtools}
TRAIN=data/a9a.train.sample
TEST=data/a9a.test.sample

for f in "$TRAIN" "$TEST"; do
    if [ ! -r "$f" ]; then
        echo "demo: $f not found; run this from the repository root" >&2
        exit 2
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/svmtrain-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

run() {
    printf '$ %s\n' "$*"
    "$@"
}

echo "# 1. Check the training sample (rows, features, labels)"
run "$SVMTOOLS" check "$TRAIN"

echo
echo "# 2. Train a binary L1-loss SVM (C = 1, stop at relative duality gap 1e-3)"
run "$SVMTRAIN" train "$TRAIN" "$tmp/a9a.model"
echo "   model header:"
sed -n '1,/^weights/p' "$tmp/a9a.model" | sed 's/^/     /'

echo
echo "# 3. Predict the test sample (labels to a file, accuracy on standard error)"
run "$SVMTRAIN" predict "$TEST" "$tmp/a9a.model" "$tmp/a9a.predictions"
echo "   first predictions: $(head -n 5 "$tmp/a9a.predictions" | tr '\n' ' ')..."

echo
echo "# 4. Certify the model: one pass over the training data recomputes P(w); D is in the model"
run "$SVMTRAIN" verify-bound "$tmp/a9a.model" "$TRAIN"

echo
echo "# 5. The same model in LIBLINEAR's format, read back by predict"
run "$SVMTRAIN" train -q --format liblinear "$TRAIN" "$tmp/a9a.liblinear"
head -n 6 "$tmp/a9a.liblinear" | sed 's/^/     /'
run "$SVMTRAIN" predict "$TEST" "$tmp/a9a.liblinear" "$tmp/a9a.liblinear.predictions"
if cmp -s "$tmp/a9a.predictions" "$tmp/a9a.liblinear.predictions"; then
    echo "   same predictions from both model files"
else
    echo "demo: the two model files predict differently" >&2
    exit 1
fi

echo
echo "Done: checked $TRAIN, trained, predicted $TEST, certified the duality gap,"
echo "and wrote and read a LIBLINEAR model (all in $tmp, now removed)."
