"""MkDocs hooks for the docs site (mkdocs.yml ``hooks:``).

The docstrings are numpydoc, written with Sphinx roles (``:func:`attnwidgets.studies.corpus_stats```,
``:class:`~attnwidgets.result.AttentionResult```), which mkdocstrings does not read: on the API pages they showed as raw
text (":func:" before each name). This hook turns each role into a cross-reference that mkdocs-autorefs resolves to the
object's section on the site (a code span when the object is not documented there, e.g. a name of numpy's), and a
``~`` keeps only the last part of the name, as Sphinx does.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):<code>(~?)([\w.]+?)(\(\))?</code>")
#: A role markdown did not turn into code: inside a code span (a parameter's type), or cut short in a summary table.
RAW_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`(~?)([\w.]*)(`?)")


def sphinx_roles_to_refs(html: str) -> str:
    """``:func:<code>~a.b.c</code>`` (a role, as markdown renders it) → an optional autoref titled ``c``; a role left
    raw (in a code span, or cut short) → its name alone.

    >>> sphinx_roles_to_refs(":func:<code>~attnwidgets.studies.corpus_stats</code> and :class:<code>int</code>")
    '<autoref identifier="attnwidgets.studies.corpus_stats" optional><code>corpus_stats</code></autoref> and \
<autoref identifier="int" optional><code>int</code></autoref>'
    >>> sphinx_roles_to_refs("<code>as in :func:`~a.train`</code>, see :meth:`Runner.ru...")
    '<code>as in train</code>, see Runner.ru...'
    """

    def ref(m: re.Match[str]) -> str:
        short, name, call = m.group(1) == "~", m.group(2), m.group(3) or ""
        title = (name.rsplit(".", 1)[-1] if short else name) + call
        return f'<autoref identifier="{name}" optional><code>{title}</code></autoref>'

    def name(m: re.Match[str]) -> str:
        return m.group(2).rsplit(".", 1)[-1] if m.group(1) == "~" else m.group(2)

    return RAW_ROLE.sub(name, ROLE.sub(ref, html))


def on_page_content(html: str, **_kwargs: Any) -> str:
    return sphinx_roles_to_refs(html)
