"""English to Zulu from a corpus archive that T2T downloads and untars."""
from tensor2tensor.data_generators import problem
from tensor2tensor.data_generators import translate
from tensor2tensor.utils import registry

_URL = "https://example.invalid/corpora/en-zu.tgz"


@registry.register_problem
class TranslateEnzuTiny(translate.TranslateProblem):

  @property
  def approx_vocab_size(self):
    return 2**9

  def source_data_files(self, dataset_split):
    train = dataset_split == problem.DatasetSplit.TRAIN
    name = "train" if train else "dev"
    return [[_URL, ("en-zu/%s.en" % name, "en-zu/%s.zu" % name)]]
