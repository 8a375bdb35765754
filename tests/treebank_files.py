"""A fake LDC treebank layout for tests that generate parsing data offline."""

TREES = {  # a fake LDC layout: section -> one .mrg file of pretty-printed trees
    "02": "( (S (NP-SBJ (DT The) (NN dog)) \n    (VP (VBZ barks)) (. .)) )\n"
          "( (S (NP-SBJ (PRP It)) (VP (VBD slept) (-NONE- *T*-1)) (. .)) )\n",
    "22": "( (S (NP (NNP Kim)) (VP (VBZ runs) (ADVP (RB fast))) (. .)) )\n",
    "23": "( (S (NP (DT A) (NN cat)) (VP (VBD sat)) (. .)) )\n",
}


def write_ldc_layout(root) -> str:
    """Writes ``TREES`` under ``root`` as LDC's parsed/mrg/wsj/SECTION/ files; returns root."""
    for section, text in TREES.items():
        folder = root / "parsed" / "mrg" / "wsj" / section
        folder.mkdir(parents=True)
        (folder / f"wsj_{section}00.mrg").write_text(text)
    return str(root)
