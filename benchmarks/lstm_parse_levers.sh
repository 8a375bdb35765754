#!/usr/bin/env bash
# Issue 60's lever sweep for the LSTM with attention on the treebank sample
# (docs/RESULTS.md, "Parsing: the Transformer against an LSTM with attention").
#
# 1. On the tuning slice (train wsj_0001-0149, dev wsj_0150-0159), the planned
#    levers of lever_table.py's TASK (lstm_parsing_slice; or ONLY of them), each
#    with SEEDS seeds, STEPS steps (a step budget, not minutes: the machine may be
#    shared), the last 5 of the checkpoints saved every 250 steps averaged, the
#    slice's dev decoded with the problem's settings (beam 21, alpha 0.3,
#    constrained) and scored with EVALB: lever_table.py trains them (PARALLEL at
#    once, resuming an interrupted sweep) and prints their table against the
#    seed spread. Then, for each run, the F1 of its last checkpoint alone, the
#    slice's dev loss at each evaluation (from the run's log), the teacher-forced
#    accuracy and loss by kind
#    of token (benchmarks/token_accuracy.py: words, opening and closing brackets)
#    and whether the attention aligns (the share of word slots attending their own
#    input word: over a reversed source it attends the word before, see the
#    table's own columns), one line a run.
#    STEPS is 3,500 because the attention starts to align only after about 2,000
#    steps (the two-hour run: 28% of word slots at step 2,000, 85% at 3,000); the
#    levers that act through it cannot show before (at 500 steps neither a
#    forward nor a reversed source aligned: 1.2% and 5.4%).
# 2. With CHOSEN set (the hparams of the recipe the sweep picked, and
#    CHOSEN_PROBLEM, default parsing_english_ptb_sample_lexical), trains it on
#    the full training range (wsj_0001-0159) for FULL_MINUTES (120), scores dev
#    (wsj_0160-0179) and prints the dev learning curve of single checkpoints
#    (benchmarks/learning_curve.py, POINTS of them) beside the loss curve.
#
#   bash benchmarks/lstm_parse_levers.sh                       # the sweep
#   ONLY="warmup general_score" PARALLEL=2 bash benchmarks/lstm_parse_levers.sh
#   TASK=lstm_parsing_slice_one_matrix PARALLEL=2 bash benchmarks/lstm_parse_levers.sh
#       # the second round: the levers over one matrix (tied_softmax), its baseline
#   SWEEP=0 CHOSEN=shared_embedding=true bash benchmarks/lstm_parse_levers.sh
#
# Runs go under ROOT (runs/lstm_levers); each run's own log is ROOT/NAME_seedSEED.log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${ROOT:-runs/lstm_levers}
STEPS=${STEPS:-3500}
SEEDS=${SEEDS:-"1234 2"}
PARALLEL=${PARALLEL:-1}
SWEEP=${SWEEP:-1}
ONLY=${ONLY:-}  # lever names to run besides the baseline (default: every planned lever)
TASK=${TASK:-lstm_parsing_slice}  # or lstm_parsing_slice_one_matrix: lever_table.py's rounds
FULL_MINUTES=${FULL_MINUTES:-120}
POINTS=${POINTS:-6}

cached() {  # cached FILE COMMAND...: FILE holds COMMAND's output, kept only if it succeeded
  [ -s "$1" ] && return
  local file=$1; shift
  if "$@" > "$file.partial" 2>&1; then mv "$file.partial" "$file"
  else echo "$*: failed, its output in $file.partial" >&2; fi
}

f1_of() {  # the first EVALB F-measure of a run's log: all sentences
  awk '/Bracketing FMeasure/ {print $4; exit}' "$1"
}

if [ "$SWEEP" = 1 ]; then
  only=()
  if [ -n "$ONLY" ]; then only=(--only="${ONLY// /,}"); fi
  python benchmarks/lever_table.py --task="$TASK" --root="$ROOT" \
    --seeds="${SEEDS// /,}" --train_steps="$STEPS" --parallel="$PARALLEL" "${only[@]}"
  echo "| run | steps/s (last log line) | slice F1 (last checkpoint alone) | slice dev loss by step | tokens: kind, accuracy, loss | word slots attending their word / the word before |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for record in "$ROOT"/*_seed*.lever; do
    run=${record%.lever}
    [ -d "$run/avg" ] || continue  # a lever of an earlier, larger sweep in this ROOT
    cached "$run.tokens" python benchmarks/token_accuracy.py --output_dir="$run/avg" --split=dev
    # The last checkpoint alone: a run whose attention aligns late averages
    # checkpoints from both sides of the turn (docs/RESULTS.md: 43.3 against 66.4).
    words=("$run"/eval/*.dev.words)
    cached "$run.last" python benchmarks/learning_curve.py --output_dir="$run/train" \
      --source="${words[0]}" --reference="${words[0]%.words}.trees" --steps="$STEPS" \
      --decode_hparams=batch_size=32
    last=$(awk -F'|' -v step="$STEPS" '$2 + 0 == step {print $4}' "$run.last" 2>/dev/null || true)
    rate=$(grep -o '[0-9.]* steps/s' "$run.log" | tail -1 || true)  # none in a short run
    kinds=$(awk -F'|' '/^\| (word|opening|closing|all)/ {printf "%s %s %s; ", $2, $5, $6}' \
      "$run.tokens" 2>/dev/null || true)
    aligned=$(awk -F'|' '/^\| layer [0-9]+ \(mean/ {v = $3 " /" $4} END {print v}' \
      "$run.tokens" 2>/dev/null || true)
    losses=$(sed -n 's/.*eval dev at step \([0-9]*\): loss \([0-9.]*\).*/\1: \2/p' "$run.log" |
      paste -sd ';' - | sed 's/;/; /g')
    echo "| $(basename "$run") | $rate | $(f1_of "$run.log") ($last) | $losses | $kinds | $aligned |"
  done
fi

if [ -n "${CHOSEN:-}" ]; then
  export MODEL=lstm_seq2seq_attention_luong HPARAMS_SET=lstm_attention_parsing
  export SAVE_STEPS=250 AVERAGE=5
  problem=${CHOSEN_PROBLEM:-parsing_english_ptb_sample_lexical}
  run="$ROOT/chosen_full"
  mkdir -p "$ROOT"
  PROBLEM=$problem HPARAMS=$CHOSEN SEED=1234 MINUTES=$FULL_MINUTES ROOT=$run \
    bash benchmarks/parse_ptb_sample.sh > "$run.log" 2>&1
  echo "chosen recipe ($CHOSEN) on $problem, dev F1 (averaged): $(f1_of "$run.log")"
  python benchmarks/learning_curve.py --output_dir="$run/train" \
    --source="$run/eval/$problem.dev.words" --reference="$run/eval/$problem.dev.trees" \
    --points="$POINTS" --decode_hparams=batch_size=32
  grep 'eval dev at step' "$run.log" | sed 's/.*eval dev at step \([0-9]*\): loss \([0-9.]*\).*/step \1: dev loss \2/'
fi
