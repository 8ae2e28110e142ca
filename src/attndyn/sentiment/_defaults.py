"""Constants of the sentiment commands that the command line names in its options, in a module that imports
nothing (so that `attndyn pretrained --help`, `attndyn sentiment --help` and `attndyn data --help` parse without
numpy or torch)."""

#: Where ``attndyn sentiment train`` (and every reader of a run folder that records no data) finds IMDb by default.
DEFAULT_DATA = "../shared/data/imdb/imdb.csv.gz"

#: The published sha256 of ``aclImdb_v1.tar.gz``, as listed by the dataset
#: catalogues that mirror it (TensorFlow Datasets, MLDatasets.jl, among others).
IMDB_SHA256 = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"

#: The ``min_d`` of each recipe of :data:`attndyn.sentiment._recipes.RECIPES`, in order.
RECIPE_MIN_D = (1, 16)

#: Every setting's value in each recipe (in the order of :data:`RECIPE_MIN_D`), for the help of
#: ``attndyn sentiment train``: a copy of what :func:`attndyn.sentiment._recipes.recipe` gives, written here so that
#: the help needs neither the model nor torch (tests/sentiment/test_settings.py checks that the two agree).
RECIPE_VALUES = {
    "layers": (8, 8),
    "tau": (0.001, 0.001),
    "alpha_init": (1.0, 1.0),
    "alpha_min": (0.5, 0.5),
    "embed_init_std": (None, 0.12),
    "registers": (0, 0),
    "register_shift": (8.0, 8.0),
    "register_length": (16.0, 16.0),
    "max_len": (256, 256),
    "min_freq": (5, 5),
    "max_vocab": (None, None),
    "min_log_odds": (0.3, 0.1),
    "stop_words": ("english", "english"),
    "keep_negations": (True, True),
    "negation_scope": (1, 1),
    "merge_negations": (True, True),
    "bigrams": (0, 5),
    "lexicon": (True, True),
    "lexicon_examples": (0, 0),
    "epochs": (8, 7),
    "batch_size": (64, 64),
    "lr": (0.003, 0.001),
    "embed_lr": (0.03, 0.003),
    "lr_decay": (1.0, 0.7),
    "weight_decay": (0.0, 0.0),
    "word_dropout": (0.1, 0.25),
    "val_fraction": (0.1, 0.1),
    "patience": (2, 2),
    "tau_start": (None, None),
    "anneal_epochs": (0, 0),
    "aux_weight": (1.0, 1.0),
    "prior_weight": (1.0, 1.0),
    "prior_margin": (2.0, 2.0),
    "train_eval_size": (2000, 2000),
}
