"""A usr_dir written for tensor2tensor, as its users wrote them (used by the tests):
its imports are T2T's and nothing in it knows t2t-lite."""
from . import chat_problem
from . import translit_problem
from . import zulu_problem
from . import my_hparams
