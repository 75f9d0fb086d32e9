// Typesets the maths of a page written by `attnwidgets export` (attnwidgets/nbexport.py) with KaTeX, offline: the
// markdown cells' $...$, $$...$$, \(...\), \[...\] and text/latex outputs. Inlined once in a page whose notebook has
// maths; KaTeX's stylesheet (fonts as data: URIs) comes with it (build.mjs: katex.css).

import renderMathInElement from "katex/contrib/auto-render";

const MATH_DELIMITERS = [
  { left: "$$", right: "$$", display: true },
  { left: "\\[", right: "\\]", display: true },
  { left: "\\begin{equation}", right: "\\end{equation}", display: true },
  { left: "\\begin{align}", right: "\\end{align}", display: true },
  { left: "$", right: "$", display: false },
  { left: "\\(", right: "\\)", display: false },
];

function typeset(): void {
  for (const el of Array.from(
    document.querySelectorAll<HTMLElement>(".jp-MarkdownOutput, [data-mime-type='text/latex']"),
  )) {
    try {
      // trust: false (KaTeX's default) keeps \href{javascript:...}, \htmlData and friends out.
      renderMathInElement(el, {
        delimiters: MATH_DELIMITERS,
        throwOnError: false,
        trust: false,
        strict: "ignore",
      });
    } catch {
      // A formula KaTeX cannot read stays as its source; the rest of the page still draws.
    }
  }
}

typeset();
