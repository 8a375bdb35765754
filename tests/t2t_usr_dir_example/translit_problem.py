"""A transliterator: characters in, characters out, the class names itself."""
import os

from tensor2tensor.data_generators import problem
from tensor2tensor.data_generators import text_problems
from tensor2tensor.utils import registry


@registry.register_problem
class TranslitHeEn(text_problems.Text2TextProblem):
  name = "he_to_en"

  @property
  def vocab_type(self):
    return text_problems.VocabType.CHARACTER

  @property
  def is_generate_per_split(self):
    return True

  @property
  def dataset_splits(self):
    return [{"split": problem.DatasetSplit.TRAIN, "shards": 2},
            {"split": problem.DatasetSplit.EVAL, "shards": 1},
            {"split": problem.DatasetSplit.TEST, "shards": 1}]

  def generate_samples(self, data_dir, tmp_dir, dataset_split):
    prefix = os.path.join(tmp_dir, "translit." + dataset_split)
    return text_problems.text2text_txt_iterator(prefix + ".he", prefix + ".en")
