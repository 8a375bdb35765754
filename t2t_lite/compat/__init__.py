"""tensor2tensor's import paths over t2t-lite, for a user's own T2T code.

A ``--t2t_usr_dir`` written for tensor2tensor imports ``tensor2tensor.utils.registry``,
``tensor2tensor.data_generators.text_problems`` and the like. ``aliases.install``
(run before a usr_dir is imported, unless a real tensor2tensor is installed) makes
``tensor2tensor.X`` import ``t2t_lite.compat.tensor2tensor.X``: thin modules that
re-export ours under T2T's names and give T2T's contracts their T2T meaning
(``problem_contract``, ``translate_sources``). A name T2T had and these modules do not
is refused in one line naming the user's FILE:LINE and what to use instead
(``refusals``), never an AttributeError from deep inside. docs/FROM_T2T.md has the map.
"""
