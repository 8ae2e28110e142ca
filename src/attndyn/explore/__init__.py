"""``attndyn explore``: the papers' pictures, live in a local, offline web page (the ``explore`` extra, Panel).

Each view is a plain function from a state to a result, computed by the library's public API, and
testable without a browser; the Panel pages only draw them: the hardmax playground (tokens, A, alpha,
layers), softmax regimes (Table 1 of the softmax paper), choosing A so that the tokens you pick lead, a
review through a trained sentiment model, and tokens on the sphere. :func:`serve` starts the app
(``attndyn explore`` calls it); :func:`build` makes it without a server.

Importing this package never imports Panel; building the app does.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from ._app import build, serve

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = ["serve", "build"]
