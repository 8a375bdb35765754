"""A chatbot: one tab-separated file, split into train and dev by T2T's shards."""
import os

from tensor2tensor.data_generators import problem
from tensor2tensor.data_generators import text_problems
from tensor2tensor.utils import metrics
from tensor2tensor.utils import registry


@registry.register_problem
class ChatbotTiny(text_problems.Text2TextProblem):

  @property
  def approx_vocab_size(self):
    return 2**11

  @property
  def is_generate_per_split(self):
    return False

  @property
  def dataset_splits(self):
    return [{"split": problem.DatasetSplit.TRAIN, "shards": 4},
            {"split": problem.DatasetSplit.EVAL, "shards": 1}]

  def generate_samples(self, data_dir, tmp_dir, dataset_split):
    del data_dir, dataset_split
    return text_problems.text2text_txt_tab_iterator(os.path.join(tmp_dir, "dialogs.tsv"))

  def eval_metrics(self):
    return [metrics.Metrics.ACC, metrics.Metrics.NEG_LOG_PERPLEXITY,
            metrics.Metrics.APPROX_BLEU]
