"""The API reference by task (docs/gen_ref.py writes it as reference/tasks.md, the reference's first page).

Each task lists public names as ``"package.name"`` (``""`` for the top level), or ``"package.*"``: every public name
of that package not listed by name elsewhere. ``tests/project/test_api_tasks.py`` keeps it whole: every public name of
every public package falls in exactly one task (a name the top level re-exports counts once, as the same object).
"""

from __future__ import annotations

#: (title, what it is for, names), in the order a newcomer meets them.
TASKS: list[tuple[str, str, list[str]]] = [
    ("Run a model and keep its attention",
     "Any model id or local folder (the bundled sentence encoder by default); results are plain numpy.",
     [".run", ".run_batch", ".generate", ".AttentionResult", ".GenerationResult", "runner.Runner",
      "runner.get_runner", "runner.load", "runner.default_model_path", "runner.Encoded", "runner.capture_qk",
      "runner.capture_qk_layers", "runner.chat_prompt", "runner.route", "runner.position_embeddings",
      "runner.mean_pattern", "runner.dense_budget", "runner.set_dense_budget", ".ModelLoadError",
      ".AttentionUnavailableError", ".AttentionTooLargeError"]),
    ("Look at it: the views",
     "Widgets for JupyterLab, Notebook 7, VS Code, Colab, marimo and Voila, linked by layer, head and span.",
     ["widgets.*", ".set_theme"]),
    ("Draw it for a paper or a slide",
     "The static matplotlib twin of every view (plots.paint draws any view, or its state, as its page does), and "
     "the tutorials' figures.",
     ["plots.*"]),
    ("Measure heads",
     "Arrays in, arrays out: Clark et al.'s statistics, patterns, word level, rollout and flow, clustering, roles.",
     ["analysis.*"]),
    ("Read treebanks and corpora",
     "CoNLL-U, CorefUD and CoNLL-2012 readers, and the samples the package ships.",
     ["analysis.read_conllu", "analysis.read_coref", "analysis.Sentence", "analysis.ParseError", "data.*"]),
    ("Switch heads off: ablation, sweeps, pruning, importance",
     "Michel et al.'s experiments and a live ablation, scored by a task you choose.",
     ["runner.Ablation", "studies.Task", "studies.sentiment_task", "studies.sts_task", "studies.sts_sample",
      "studies.evaluate", "studies.pooled_embedding", "studies.pooled_embeddings", "studies.sweep_heads",
      "studies.SweepResult", "studies.pruning_curve", "studies.random_pruning_curve", "studies.PruningCurve",
      "studies.head_importance", "studies.normalize_importance", "studies.ImportanceSums", "studies.watch_ablation",
      "studies.WatchResult", "studies.shipped_study"]),
    ("What a head does",
     "Patching, direct logit attribution, the logit lens, what each sublayer writes, head roles, gradients.",
     ["studies.patch_heads", "studies.PatchingResult", "studies.logit_attribution", "studies.LogitAttribution",
      "studies.logit_lens", "studies.LogitLens", "studies.fill_mask_lens", "studies.residual_contributions",
      "studies.head_roles",
      "studies.confirm_role", "studies.induction_loss", "studies.attention_gradients", "studies.GradientStats",
      "studies.embedding_similarity"]),
    ("Beyond the weights: norms and context mixing",
     "Kobayashi et al.'s norms and Mohebbi et al.'s value zeroing.",
     ["studies.norm_attention", "studies.value_norms", "studies.mixing_ratio", "studies.norm_result",
      "studies.norm_results", "studies.value_zeroing", "studies.value_zeroing_result"]),
    ("Studies over a corpus or a treebank",
     "Statistics over many texts, heads as parsers and coreference resolvers, the attention probe, the QK space, "
     "fill-in accuracy, fine-tuning, padding.",
     ["studies.corpus_stats", "studies.dependency_scores", "studies.attention_probe", "studies.ProbeResult",
      "studies.coref_scores", "studies.qk_space", "studies.fill_mask", "studies.fill_mask_accuracy",
      "studies.frequency_baseline", "studies.padding_check", "studies.compare_finetuning",
      "studies.finetune_classifier", "studies.FinetuneComparison"]),
    ("Run on many processes",
     "A local process pool or a Ray cluster, and merging shards of a run.",
     ["studies.merge", "studies.worker_pool", "studies.shutdown_pool"]),
    ("Save, load and share",
     "Files that open with no kernel, pages with live views.",
     [".save", ".load", ".save_html", "studies.save", "studies.load", ".SavedFileError"]),
    ("Teach",
     "A readable toy Transformer, its tasks and training, pre-training objectives, norms and attention's cost.",
     ["teaching.*"]),
    ("Build a view of your own",
     "What a widget and its static twin compute from a result: checks, display matrices, payloads, themes.",
     ["viewdata.*"]),
]


def _same(a: object, b: object) -> bool:
    """The same public thing: one object (a class, a function, a module), not two equal small values."""
    return a is b and not isinstance(a, (int, float, str, bytes, bool, type(None)))


def assign(exports: dict[str, dict[str, object]]) -> tuple[dict[str, list[tuple[str, str]]], list[str]]:
    """Every public name under its task. ``exports``: package ("" for the top level, else "runner", ...) -> its
    ``__all__`` names -> objects, the top level first. Returns (task title -> [(package, name)], each object once,
    under the first package that exports it) and the problems: a name listed that is not public, a public name in no
    task or in two."""
    problems = []
    explicit: list[tuple[str, str, str, object]] = []  # (title, package, name, object)
    for title, _what, names in TASKS:
        for entry in names:
            package, name = entry.rsplit(".", 1)
            if name == "*":
                if package not in exports:
                    problems.append(f"{entry}: no public package {package!r}")
            elif name not in exports.get(package, {}):
                problems.append(f"{entry}: not a public name")
            else:
                explicit.append((title, package, name, exports[package][name]))
    placed: dict[str, list[tuple[str, str]]] = {title: [] for title, _w, _n in TASKS}
    done: list[object] = []
    for package, names in exports.items():
        for name, obj in names.items():
            if name.startswith("__") or any(_same(obj, d) for d in done):
                continue
            titles = list(dict.fromkeys(t for t, p, n, o in explicit if _same(o, obj) or (p, n) == (package, name)))
            if not titles:  # the wildcard of a package that exports it (the top level re-exports the views)
                homes = [p for p, ns in exports.items() if p == package or any(_same(o, obj) for o in ns.values())]
                titles = list(dict.fromkeys(t for t, _w, ns in TASKS for h in homes if f"{h}.*" in ns))
            if len(titles) != 1:
                problems.append(f"{package}.{name}: in {len(titles)} tasks {titles}")
                continue
            placed[titles[0]].append((package, name))
            done.append(obj)
    return placed, problems
