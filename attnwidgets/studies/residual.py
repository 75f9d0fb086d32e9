"""How much each sublayer (attention, feed-forward) of a real model writes into the residual stream, per layer.

The hooks are :mod:`attnwidgets.runner.residual`; the ratio ``‖sublayer output‖ / ‖residual stream‖`` (mean over
tokens) is :func:`attnwidgets.analysis.residual.write_ratio`. The toy model's twin is
:func:`attnwidgets.teaching.block.toy_residual_contributions`.

Examples
--------
>>> import attnwidgets as aw
>>> rc = aw.studies.residual_contributions("The cat sat on the mat.")      # the bundled MiniLM: BERT-style, post-LN
>>> rc.ratio.shape, rc.sublayers, rc.norm_first
((6, 2), ['attention', 'feed-forward'], False)
"""

from __future__ import annotations

import os

from ..analysis.residual import ResidualContributions
from ..runner import Runner, get_runner
from ..runner.residual import SUBLAYERS, ResidualUnavailableError, residual_vectors

__all__ = ["ResidualUnavailableError", "residual_contributions"]


def residual_contributions(text: str, model: str | os.PathLike[str] | Runner | None = None, *,
                           text_pair: str | None = None) -> ResidualContributions:
    """Per layer, mean over the tokens of ``text`` of ``‖attention output‖ / ‖stream‖`` and ``‖FFN output‖ / ‖stream‖``.

    The stream is what the sublayer's output is added to: the layer's input for attention; for the feed-forward
    sublayer, the layer input plus the attention output (pre-LN) or the attention sublayer's normalised output
    (post-LN, BERT). Special tokens count like the others.

    Parameters
    ----------
    text : str
    model : str | PathLike | Runner, optional
        Default: the bundled model (MiniLM, BERT-style post-LN). Pre-LN decoders (GPT-2, Llama, ...) work too;
        other block shapes raise :class:`ResidualUnavailableError`.
    text_pair : str, optional
        A second segment, for encoders.
    """
    runner = get_runner(model)
    vectors, tokens, pre_ln = residual_vectors(runner, text, text_pair)
    n_layers = runner.info.n_layers
    return ResidualContributions.from_vectors(vectors, [f"L{i}" for i in range(n_layers)], list(SUBLAYERS),
                                              model=runner.info.name, norm_first=pre_ln, tokens=tokens)
