"""``attndyn explore``: the papers' pictures, live in a local, offline web page (the ``explore`` extra, Panel).

Each view is a plain function from a state to a result, computed by the library's public API, and
testable without a browser; the Panel pages (:mod:`attndyn.explore.pages`) only draw them:

- :mod:`~attndyn.explore.hardmax_view`: the hardmax playground (tokens, A, alpha, layers).
- :mod:`~attndyn.explore.softmax_view`: softmax regimes (Table 1 of the softmax paper).
- :mod:`~attndyn.explore.control_view`: choose A so that the tokens you pick lead.
- :mod:`~attndyn.explore.sentiment_view`: a review through a trained sentiment model.
- :mod:`~attndyn.explore.parse`: typed matrices and indices; :mod:`~attndyn.explore.export`: downloads.
- :mod:`~attndyn.explore.app`: the app and its server.
"""
