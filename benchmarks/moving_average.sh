#!/usr/bin/env bash
# What a moving average of the weights (moving_average_decay) buys on Multi30k En->De,
# against averaging the last checkpoints and together with it; two seeds, chosen on val.
#
#   bash benchmarks/moving_average.sh        # ROOT=runs/moving_average, SEEDS=1234,2
#
# 1. lever_table.py trains transformer_multi30k_tiny with moving_average_decay=DECAY
#    once a seed (its recipe: 4,000 steps, a checkpoint every 200). The weights as
#    trained are those of a run without the average (the average only watches:
#    tests/test_moving_average.py), so each run measures both arms.
# 2. sweep_decode.py decodes val with the last 1, 5, 10 and 20 checkpoints averaged,
#    reading the moving average and (--raw_weights) the weights as trained.
# 3. Each arm's setting best on val (the seeds' mean) decodes test_2016_flickr once.
# Every step skips work whose output exists, so a stopped run goes on where it was.
set -euo pipefail
ROOT=${ROOT:-runs/moving_average}
SEEDS=${SEEDS:-1234,2}
DECAY=${DECAY:-0.9999}
PARALLEL=${PARALLEL:-2}
AVERAGES=${AVERAGES:-1,5,10,20}
DECODE=beam_size=4,alpha=1.0,batch_size=64  # the lever table's, chosen on val
SCORE="tokenized BLEU (lowercased)"
here=$(dirname "$0")
python "$here/lever_table.py" --task=multi30k_ende --root="$ROOT" --parallel="$PARALLEL" \
    --seeds="$SEEDS" --lever="ema=moving_average_decay=$DECAY"

for seed in ${SEEDS//,/ }; do
    run=$ROOT/ema_seed$seed
    for weights in average raw; do
        out=$run/sweep_$weights.txt
        grep -q "^best on" "$out" 2>/dev/null && continue
        raw=(); [ "$weights" = raw ] && raw=(--raw_weights)
        python "$here/sweep_decode.py" --output_dir="$run/train" "${raw[@]}" \
            --source="$run/eval/translate_ende_multi30k.dev.en" \
            --reference="$run/eval/translate_ende_multi30k.dev.de" \
            --averages="$AVERAGES" --beams=4 --alphas=1.0 --decode_hparams=batch_size=64 \
            --score_line="$SCORE" > "$out.partial"
        mv "$out.partial" "$out"
    done
done

# The val table (mean over the seeds), and each arm's best setting.
read -r best_average best_raw < <(python3 - "$ROOT" "$SEEDS" <<'EOF'
import re, statistics, sys
root, seeds = sys.argv[1], sys.argv[2].split(",")
rows = {}
for weights in ("average", "raw"):
    for seed in seeds:
        for line in open(f"{root}/ema_seed{seed}/sweep_{weights}.txt"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 6 and re.fullmatch(r"\d+", cells[1]):
                rows.setdefault((weights, int(cells[1])), []).append(float(cells[4]))
print("| weights | checkpoints averaged | val BLEU by seed | mean |", file=sys.stderr)
print("| --- | --- | --- | --- |", file=sys.stderr)
for (weights, count), scores in sorted(rows.items()):
    print(f"| {weights} | {count} | {' / '.join(f'{s:.2f}' for s in scores)} | "
          f"{statistics.mean(scores):.2f} |", file=sys.stderr)
best = {w: max((statistics.mean(s), c) for (ww, c), s in rows.items() if ww == w)[1]
        for w in ("average", "raw")}
print(best["average"], best["raw"])
EOF
)

# Test, once per arm and seed, with the setting chosen on val.
read -r test_source test_reference < <(t2t-datagen --problem=translate_ende_multi30k \
    --data_dir="$ROOT/ema_seed${SEEDS%%,*}/data" --tmp_dir=../shared/data/multi30k \
    --eval_files_dir="$ROOT/test_files" --eval_split=test | awk '/^eval files:/ {print $3, $4}')
for seed in ${SEEDS//,/ }; do
    run=$ROOT/ema_seed$seed
    for weights in average raw; do
        n=$best_average; raw=()
        [ "$weights" = raw ] && n=$best_raw && raw=(--raw_weights)
        out=$run/test_${weights}_avg$n
        if ! grep -q "^$SCORE" "$out.txt" 2>/dev/null; then
            t2t-avg-all --model_dir="$run/train" --output_dir="$run/avg$n" --n="$n" > /dev/null
            t2t-decoder --output_dir="$run/avg$n" "${raw[@]}" --decode_hparams="$DECODE" \
                --decode_from_file="$test_source" --decode_to_file="$out.decoded" \
                --decode_reference="$test_reference" > "$out.txt"
        fi
        echo "seed $seed, $weights weights, last $n averaged: $(grep "^$SCORE" "$out.txt")"
    done
done
