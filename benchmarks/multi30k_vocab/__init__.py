"""Multi30k with a 4000-id vocabulary, for ``benchmarks/lever_table.py``'s vocabulary
lever (``--t2t_usr_dir=benchmarks/multi30k_vocab``).

Another vocabulary is another problem, as in tensor2tensor (``translate_ende_wmt8k``
beside ``translate_ende_wmt32k``): its data, vocabulary file and checkpoints never
mix with the 8000-id problem's. Registered here and not in the library, as a user
would register theirs: ``translate_ende_multi30k_vocab4000`` and
``translate_enfr_multi30k_vocab4000`` (with their ``_rev`` directions).
"""
from t2t_lite.problems.multi30k import TranslateEndeMulti30k, TranslateEnfrMulti30k
from t2t_lite.problems.translate import register_translate_problem


@register_translate_problem
class TranslateEndeMulti30kVocab4000(TranslateEndeMulti30k):
    """Multi30k English -> German, 4000 shared BPE ids."""

    subword_vocab_size = 4000


@register_translate_problem
class TranslateEnfrMulti30kVocab4000(TranslateEnfrMulti30k):
    """Multi30k English -> French, 4000 shared BPE ids."""

    subword_vocab_size = 4000
