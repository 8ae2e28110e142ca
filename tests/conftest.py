import os

os.environ.setdefault("MPLBACKEND", "Agg")

import torch  # noqa: E402

# The suite runs many tiny problems: intra-op threads only add synchronisation cost there
# (and stall badly when the machine is busy). Library code never changes this setting.
torch.set_num_threads(1)
