#!/usr/bin/env bash
# Issue 60's lever sweep for the LSTM with attention on the treebank sample
# (docs/RESULTS.md, "Parsing: the Transformer against an LSTM with attention").
#
# 1. On the tuning slice (train wsj_0001-0149, dev wsj_0150-0159), every lever of
#    LEVERS below, SEEDS seeds each, STEPS steps (a step budget, not minutes: the
#    machine may be shared), a checkpoint every SAVE_STEPS, the last AVERAGE
#    averaged, the slice's dev decoded with the problem's settings (beam 21,
#    alpha 0.3, constrained) and scored with EVALB; then the teacher-forced
#    accuracy and loss by kind of token (benchmarks/token_accuracy.py: words,
#    opening and closing brackets) and whether the attention aligns (the share of
#    word slots attending their own input word: over a reversed source it attends
#    the word before, see the table's own columns). Prints one line per run at the end.
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
#   ONLY="uniform_init uniform_warmup" bash benchmarks/lstm_parse_levers.sh
#   SWEEP=0 CHOSEN=initializer=uniform bash benchmarks/lstm_parse_levers.sh
#
# Runs go under ROOT (runs/lstm_levers); each run's own log is ROOT/NAME.log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${ROOT:-runs/lstm_levers}
STEPS=${STEPS:-3500}
SEEDS=${SEEDS:-"1234 2"}
SAVE_STEPS=${SAVE_STEPS:-250}
AVERAGE=${AVERAGE:-5}
SWEEP=${SWEEP:-1}
ONLY=${ONLY:-}  # lever names to run, in this order (default: every lever)
FULL_MINUTES=${FULL_MINUTES:-120}
POINTS=${POINTS:-6}
LEXICAL=parsing_english_ptb_sample_lexical_tune
UNIFORM=initializer=uniform
# name | tuning-slice problem | hparams over lstm_attention_parsing
LEVERS=(
  "keras_init|$LEXICAL|initializer=keras"
  "uniform_init|$LEXICAL|$UNIFORM"
  "uniform_tied_softmax|$LEXICAL|$UNIFORM,shared_embedding=true,shared_embedding_and_softmax_weights=true"
  "uniform_labelled_closers|parsing_english_ptb_sample_lexical_labelled_tune|$UNIFORM"
  "uniform_warmup|$LEXICAL|$UNIFORM,learning_rate_schedule=linear_warmup,learning_rate_warmup_steps=500"
  "uniform_sgd_sentences|$LEXICAL|$UNIFORM,optimizer=sgd,learning_rate=1.0,loss_normalizer=sentences,label_smoothing=0.0"
  "uniform_xla|$LEXICAL|$UNIFORM,xla=true"
  "uniform_general_score|$LEXICAL|$UNIFORM,attention_score=general"
  "uniform_xx|parsing_english_ptb_sample_tune|$UNIFORM"
  "uniform_xx_labelled_closers|parsing_english_ptb_sample_labelled_tune|$UNIFORM"
)
export MODEL=lstm_seq2seq_attention_luong HPARAMS_SET=lstm_attention_parsing
export SAVE_STEPS AVERAGE
mkdir -p "$ROOT"
if [ -n "$ONLY" ]; then
  chosen=()
  for name in $ONLY; do
    found=""
    for lever in "${LEVERS[@]}"; do
      [ "${lever%%|*}" = "$name" ] && chosen+=("$lever") && found=1
    done
    [ -n "$found" ] || { echo "no lever $name; the levers: $(printf '%s ' "${LEVERS[@]%%|*}")" >&2; exit 2; }
  done
  LEVERS=("${chosen[@]}")
fi

f1_of() {  # the first EVALB F-measure of a run's log: all sentences
  awk '/Bracketing FMeasure/ {print $4; exit}' "$1"
}

if [ "$SWEEP" = 1 ]; then
  for lever in "${LEVERS[@]}"; do
    IFS='|' read -r name problem hparams <<< "$lever"
    for seed in $SEEDS; do
      run="$ROOT/${name}_seed$seed"
      PROBLEM=$problem HPARAMS=$hparams SEED=$seed TRAIN_STEPS=$STEPS MINUTES=10000 ROOT=$run \
        nice -n 10 bash benchmarks/parse_ptb_sample.sh > "$run.log" 2>&1
      nice -n 10 python benchmarks/token_accuracy.py --output_dir="$run/avg" --split=dev \
        > "$run.tokens" 2>&1
    done
  done
  echo "| lever | seed | steps/s (last log line) | slice F1 | tokens: kind, accuracy, loss | word slots attending their word / the word before |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for lever in "${LEVERS[@]}"; do
    IFS='|' read -r name _ _ <<< "$lever"
    for seed in $SEEDS; do
      run="$ROOT/${name}_seed$seed"
      rate=$(grep -o '[0-9.]* steps/s' "$run.log" | tail -1)
      kinds=$(awk -F'|' '/^\| (word|opening|closing|all)/ {printf "%s %s %s; ", $2, $5, $6}' \
        "$run.tokens")
      aligned=$(awk -F'|' '/^\| layer [0-9]+ \(mean/ {v = $3 " /" $4} END {print v}' "$run.tokens")
      echo "| $name | $seed | $rate | $(f1_of "$run.log") | $kinds | $aligned |"
    done
  done
fi

if [ -n "${CHOSEN:-}" ]; then
  problem=${CHOSEN_PROBLEM:-parsing_english_ptb_sample_lexical}
  run="$ROOT/chosen_full"
  PROBLEM=$problem HPARAMS=$CHOSEN SEED=1234 MINUTES=$FULL_MINUTES ROOT=$run \
    nice -n 10 bash benchmarks/parse_ptb_sample.sh > "$run.log" 2>&1
  echo "chosen recipe ($CHOSEN) on $problem, dev F1 (averaged): $(f1_of "$run.log")"
  nice -n 10 python benchmarks/learning_curve.py --output_dir="$run/train" \
    --source="$run/eval/$problem.dev.words" --reference="$run/eval/$problem.dev.trees" \
    --points="$POINTS" --decode_hparams=batch_size=32
  grep 'eval dev at step' "$run.log" | sed 's/.*eval dev at step \([0-9]*\): loss \([0-9.]*\).*/step \1: dev loss \2/'
fi
