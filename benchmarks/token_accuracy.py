"""Teacher-forced accuracy on a split, by kind of target token: where a model's
next-token predictions fail, before any search.

    python benchmarks/token_accuracy.py --output_dir=runs/lstm_full/avg --split=dev

For a parser (a problem scored by EVALB) the kinds are read from the
vocabulary: an opening bracket with its label ("(NP"), a closing bracket (")"),
and everything else (words, or the "XX" of an unlexicalised tree); any other
problem has one kind, so that a "(" of a translation is not counted as a label.
Prints one Markdown row per kind: tokens, share of the split, accuracy, and
the mean teacher-forced loss (cross-entropy in nats, no label smoothing): a
model that has not learned to read its source shows it on the words first.

A parser's rows also give the accuracy of the decision its constrained decoding
takes: there a word slot may hold only the next input word, scored with the
model's whole word mass, so what counts is whether the model puts more mass on
"a word now" than on any one bracket, not which word it would spell.

For a parser with attention, a last table says whether the attention aligns:
the k-th word slot of a tree (a word, or XX) belongs to the k-th input word, so
for each layer (its heads' mean) and for the best single head it gives the share
of word slots whose strongest attention is on their own input word, on the word
before it and on the word after it (a one-directional encoder's state of a
neighbour can hold the word: over a reversed source, the state of the word
before has just read it), and the mean weight on the word (1/S for a uniform
attention; sentences whose slots and words differ in number are left out). A model that copies words from its encoder's last state
while its attention looks elsewhere scores low here and high on the words above.
"""
from __future__ import annotations

import collections
import sys

import numpy as np

from t2t_lite.bin import common, trained_run
from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID


WORD_KIND = "word or other"


def tree_token_kind(token: str) -> str:
    if token.startswith(")"):  # ")" or a labelled closer, ")NP"
        return "closing bracket"
    return "opening bracket + label" if token.startswith("(") else WORD_KIND


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def word_mass_decisions(logits: np.ndarray, targets: np.ndarray,
                        is_word: np.ndarray) -> np.ndarray:
    """bool [B, T]: whether the model's best choice is the target's when every word
    id is one choice ("a word"), with the summed probability of all of them."""
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    word_mass = probs[..., is_word].sum(axis=-1)
    others = np.where(is_word, 0.0, probs)
    best = np.where(word_mass > others.max(axis=-1), -1, others.argmax(axis=-1))
    return best == np.where(is_word[targets], -1, targets)


class WordAlignment:
    """Sums, per (layer, head) and per layer's mean of heads, of the attention that
    each word slot puts on its own input word: argmax hits (on the word, the word
    before and the word after) and weight."""

    def __init__(self) -> None:
        self.slots = 0
        self.sums = {f"{of}_{what}": 0.0 for of in ("head", "layer")
                     for what in ("hits", "before", "after", "weight")}

    def add(self, weights: np.ndarray, inputs: np.ndarray, targets: np.ndarray,
            is_word: np.ndarray) -> None:
        """weights [B, layers, heads, T, S] (sources in input order); inputs [B, S] and
        targets [B, T] ids; is_word [vocab] bool: the slots of the target."""
        layer_mean = weights.mean(axis=2, keepdims=True)
        for b in range(len(inputs)):
            words = np.flatnonzero((inputs[b] != PAD_ID) & (inputs[b] != EOS_ID))
            slots = np.flatnonzero((targets[b] != PAD_ID) & (targets[b] != EOS_ID)
                                   & is_word[targets[b]])
            if len(words) != len(slots) or not len(slots):
                continue
            for both, name in ((weights[b], "head"), (layer_mean[b], "layer")):
                over_slots = both[:, :, slots, :]  # [layers, heads, slots, S]
                strongest = over_slots.argmax(axis=-1)
                self.sums[f"{name}_hits"] += (strongest == words).sum(axis=-1)
                self.sums[f"{name}_before"] += (strongest == words - 1).sum(axis=-1)
                self.sums[f"{name}_after"] += (strongest == words + 1).sum(axis=-1)
                self.sums[f"{name}_weight"] += over_slots[:, :, np.arange(len(slots)),
                                                          words].sum(axis=-1)
            self.slots += len(slots)

    def rows(self) -> list[list[str]]:
        """[what, share of slots whose strongest attention is on their word, on the
        word before, on the word after, mean weight on the word]: each layer's mean of heads, then
        the best head (if there are more than one)."""
        if not self.slots:
            return []

        def row(what: str, of: str, at: tuple[int, int]) -> list[str]:
            return [what, *(f"{self.sums[f'{of}_{kind}'][at] / self.slots:.1%}"
                            for kind in ("hits", "before", "after")),
                    f"{self.sums[f'{of}_weight'][at] / self.slots:.3f}"]
        layers = len(self.sums["layer_hits"])
        rows = [row(f"layer {layer} (mean of heads)", "layer", (layer, 0))
                for layer in range(layers)]
        if self.sums["head_hits"].shape[1] > 1:
            best = np.unravel_index(np.argmax(self.sums["head_hits"]),
                                    self.sums["head_hits"].shape)
            rows.append(row(f"best head: layer {best[0]}, head {best[1]}", "head", best))
        return rows


def main(argv: list[str] | None = None) -> None:
    parser = common.CommandParser(description=__doc__.split("\n")[0])
    common.add_registry_flags(parser)  # --output_dir: a training or averaged folder
    parser.add_argument("--split", default="dev")
    args = parser.parse_args(argv)
    # The heavy imports wait until the flags are read (TensorFlow starts quietly).
    from t2t_lite.data.pipeline import batch_examples
    from t2t_lite.models.base import NoAttentionError
    from t2t_lite.training.checkpoints import restore_model

    if trained_run.start(args):
        return
    run = trained_run.open_run(args, "token_accuracy",
                               reads=trained_run.INFERENCE_HPARAMS + ("batch_size",))
    experiment = run.experiment
    model = experiment.build_model()
    restore_model(model, args.output_dir)
    encoder = experiment.problem.feature_encoders(experiment.data_dir)["targets"]
    is_parser = experiment.problem.eval_metric == "evalb"
    kinds = [tree_token_kind(encoder.decode([i])) if is_parser else "token"
             for i in range(encoder.vocab_size)]
    batches = batch_examples(experiment.problem.dataset(args.split, experiment.data_dir),
                             experiment.hparams.batch_size, experiment.hparams.max_length,
                             training=False)
    is_word = np.array([kind == WORD_KIND for kind in kinds])
    right, decided, total = (collections.Counter() for _ in range(3))
    nats: collections.Counter = collections.Counter()
    alignment, aligns = WordAlignment(), is_parser
    for batch in batches:
        logits = model(batch, training=False).numpy()
        targets = batch["targets"].numpy()
        real = targets != PAD_ID
        losses = -np.take_along_axis(log_softmax(logits), targets[..., None], -1)[..., 0]
        for kind, hit, decision, loss in zip(np.array(kinds)[targets[real]],
                                             np.argmax(logits, axis=-1)[real] == targets[real],
                                             word_mass_decisions(logits, targets, is_word)[real],
                                             losses[real]):
            total[kind] += 1
            right[kind] += int(hit)
            decided[kind] += int(decision)
            nats[kind] += float(loss)
        if aligns:
            try:
                weights = model.attention_weights(batch)["encoder_decoder"].numpy()
            except NoAttentionError:
                aligns = False  # no attention to align: the table is left out
            else:
                alignment.add(weights, batch["inputs"].numpy(), targets, is_word)
    count = sum(total.values())
    columns = ["token kind (" + args.split + ")", "tokens", "share", "teacher-forced accuracy",
               "teacher-forced loss"]
    if is_parser:
        columns.append("decision right, a word slot scored with the word mass")
    print("| " + " | ".join(columns) + " |")
    print("|" + " --- |" * len(columns))
    rows = [(kind, total[kind], right[kind], decided[kind], nats[kind])
            for kind in sorted(total, key=total.get, reverse=True)]
    for kind, tokens, hits, decisions, loss in rows + [
            ("all", count, sum(right.values()), sum(decided.values()), sum(nats.values()))]:
        cells = [kind, f"{tokens:,}", f"{tokens / count:.1%}", f"{hits / tokens:.1%}",
                 f"{loss / tokens:.3f}"]
        if is_parser:
            cells.append(f"{decisions / tokens:.1%}")
        print("| " + " | ".join(cells) + " |")
    aligned = alignment.rows()
    if aligned:
        print(f"\n| encoder-decoder attention ({alignment.slots:,} word slots) | "
              "strongest on its own input word | on the word before | on the word after | "
              "mean weight on its own |")
        print("| --- | --- | --- | --- | --- |")
        for row in aligned:
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(common.run_main("token_accuracy.py", main))
