"""Evaluation metrics: BLEU for translation (``bleu``), the metrics problems name
(``scoring``), and the one normalisation every scorer applies first (``lookalike``)."""
