"""The README's Figure 9 and the explanation its caption quotes, from a trained d = 2 run folder.

    python docs/make_sentiment_images.py --run runs/seeds/d2-seed0

writes docs/images/sentiment_fig9.png and docs/results/readme_explain.json (the output of
``attndyn sentiment explain --model RUN TEXT --json``); the README caption's numbers are read from it.
"""

import argparse
import contextlib
import io
import json
from pathlib import Path

from attndyn._io import write_json
from attndyn.cli import main

TEXT = "The acting was not good and the plot was a boring waste of time, although the music was wonderful."
DOCS = Path(__file__).parent

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--run", required=True)
args = ap.parse_args()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(
        [
            "sentiment",
            "explain",
            "--model",
            args.run,
            TEXT,
            "--json",
            "--figure",
            str(DOCS / "images" / "sentiment_fig9.png"),
        ]
    )
if code:
    raise SystemExit(code)
record = json.loads(out.getvalue())
record.pop("attributions", None)
write_json(
    DOCS / "results" / "readme_explain.json",
    {"script": "docs/make_sentiment_images.py", "run": args.run, "text": TEXT, "explanation": record},
)
