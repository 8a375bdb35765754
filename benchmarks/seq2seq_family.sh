#!/usr/bin/env bash
# The comparison (docs/RESULTS.md) of the Transformer with the RNN models it replaced:
# every model of each suite trained for the same wall-clock budget on this
# machine, alone (MINUTES, 30 by default), its last 5 checkpoints (one every
# 1.5 minutes) averaged, then decoded and scored. Multi30k En->De first
# (BLEU, and BLEU by source length), then the treebank sample (EVALB F1).
# Rows already in a suite's results.json are kept, so a rerun resumes.
set -euo pipefail
cd "$(dirname "$0")/.."
for suite in ${SUITES:-translation parsing}; do
  python benchmarks/seq2seq_family.py --suite="$suite" --minutes="${MINUTES:-30}" \
      --save_minutes=1.5 --average=5 "$@"
done
