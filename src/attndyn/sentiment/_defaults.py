"""Constants of the sentiment data that the command line names in its options, in a module that imports nothing
(so that `attndyn pretrained --help` parses without numpy)."""

#: Where ``attndyn sentiment train`` (and every reader of a run folder that records no data) finds IMDb by default.
DEFAULT_DATA = "../shared/data/imdb/imdb.csv.gz"
