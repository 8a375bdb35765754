"""Evaluation metrics: BLEU for translation (``bleu``)."""
