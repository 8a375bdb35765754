"""What the tests of a usr_dir written for tensor2tensor share: the example usr_dir,
made-up data in the layouts its problems read, one-module usr_dirs of T2T-style
source, and a split read back as text."""
import io
import os
import random
import tarfile
import textwrap

import pytest

from t2t_lite import registry

EXAMPLE = os.path.join(os.path.dirname(__file__), "t2t_usr_dir_example")

WORDS = ("hello how are you fine thanks what is your name my name is ana good night see "
         "you soon where do you live i live near the river").split()

def make_tmp_dir(root) -> str:
    """The files the example usr_dir's problems read, made up: a dialog file, a
    transliteration corpus per split and the Zulu corpus archive a download would give."""
    tmp_dir = str(root / "tmp")
    os.makedirs(tmp_dir)
    rng = random.Random(0)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    with open(os.path.join(tmp_dir, "dialogs.tsv"), "w", encoding="utf-8") as f:
        for i in range(303):
            f.write(f"{sentence(5)} {i}\t{sentence(4)}\n")
    for split, count in (("train", 60), ("dev", 6), ("test", 5)):
        for side, word in (("he", "שלום"), ("en", "shalom")):
            with open(os.path.join(tmp_dir, f"translit.{split}.{side}"), "w",
                      encoding="utf-8") as f:
                f.writelines(f"{word}{i}\n" for i in range(count))
    with tarfile.open(os.path.join(tmp_dir, "en-zu.tgz"), "w:gz") as archive:
        for split, count in (("train", 200), ("dev", 10)):
            for side in ("en", "zu"):
                text = "".join(f"{sentence(6)} {side}\n" for _ in range(count)).encode()
                member = tarfile.TarInfo(f"en-zu/{split}.{side}")
                member.size = len(text)
                archive.addfile(member, io.BytesIO(text))
    return tmp_dir

def write_usr_dir(root, source: str, name: str = "their_t2t") -> str:
    """A one-module usr_dir holding ``source`` (T2T-style code) as ``problems.py``."""
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("from . import problems\n")
    (package / "problems.py").write_text(textwrap.dedent(source))
    return str(package)

def refusal(usr_dir_import, usr_dir: str) -> str:
    with pytest.raises(registry.UsrDirError) as caught:
        usr_dir_import(usr_dir)
    message = str(caught.value)
    assert "\n" not in message
    return message

def read_split(problem, data_dir: str, split: str) -> list[str]:
    encoder = problem.feature_encoders(data_dir)["targets"]
    return [encoder.decode(example["targets"].numpy())
            for example in problem.dataset(split, data_dir)]

def character_problem(class_name: str, members: str, after: str = "") -> str:
    """T2T-style source of one registered Text2TextProblem on bytes (lines 1-8),
    ``members``, its own body, from line 9, and module code ``after`` it."""
    return textwrap.dedent(f"""\
        from tensor2tensor.data_generators import generator_utils, problem, text_problems
        from tensor2tensor.utils import registry

        @registry.register_problem
        class {class_name}(text_problems.Text2TextProblem):
          @property
          def vocab_type(self):
            return text_problems.VocabType.CHARACTER
        """) + textwrap.indent(textwrap.dedent(members), "  ") + textwrap.dedent(after)
