// The logit lens as a table (GenerationView per step, FillMask per [MASK]): a row per read-out (the embeddings, then
// each layer), the top-k tokens of each row, each cell shaded by its probability. Mirrors
// attnwidgets/viewdata/lens.py (LensTable) and the static twin attnwidgets/plots/lens.py. Token text is set with
// textContent (through h()), never as markup.

import type { LensTable } from "../generated/wire";
import type { Matrix } from "../shared/buffers";
import { h } from "../shared/dom";
import { tokenLabel, userText } from "../shared/text";

/** One table's rows of [token, probability] pairs: table `t` of `probs` (tables, rows, k). */
export function lensRows(
  lens: Pick<LensTable, "tokens">,
  probs: Matrix,
  t: number,
): Array<Array<[string, number]>> {
  const [tables, rows, k] = probs.shape;
  if (t < 0 || t >= tables) return [];
  const out: Array<Array<[string, number]>> = [];
  for (let r = 0; r < rows; r++) {
    const row: Array<[string, number]> = [];
    for (let j = 0; j < k; j++)
      row.push([lens.tokens[t]?.[r]?.[j] ?? "", probs.data[(t * rows + r) * k + j]]);
    out.push(row);
  }
  return out;
}

/** A cell's shade: the accent mixed in at a share of the probability (0..70 %, so the token stays readable). */
export function lensShade(p: number): string {
  const share = Math.round(Math.max(0, Math.min(1, p)) * 70);
  return `background: color-mix(in srgb, var(--aw-accent) ${share}%, transparent)`;
}

/** Draw table `t` of `lens` into `box` (hidden when `lens` is absent or `show` is off); `highlight`: a row to
 * outline (FillMask's layer). */
export function paintLens(
  box: HTMLElement,
  lens: LensTable | undefined,
  probs: Matrix | null,
  t: number,
  o: { show: boolean; highlight?: number; heading: string },
): void {
  if (!o.show || !lens || !probs) {
    box.style.display = "none";
    box.replaceChildren();
    box.dataset.table = "";
    return;
  }
  box.style.display = "";
  const rows = lensRows(lens, probs, t);
  const k = probs.shape[2];
  const head = h(
    "tr",
    {},
    h("th", { text: "" }),
    ...Array.from({ length: k }, (_, j) => h("th", { text: `${j + 1}` })),
  );
  const body = rows.map((row, r) =>
    h(
      "tr",
      { className: r === o.highlight ? "aw-lens-on" : undefined, "data-row": r },
      h("th", { text: lens.rows[r] ?? "", className: "aw-lens-label" }),
      ...row.map(([tok, p]) =>
        h("td", {
          text: tokenLabel(tok, 10),
          style: lensShade(p),
          "data-prob": p.toFixed(6),
          title: `${(p * 100).toFixed(1)}%`,
        }),
      ),
    ),
  );
  box.replaceChildren(
    h("div", { className: "aw-muted", text: o.heading }),
    h("table", { className: "aw-lens-table" }, h("thead", {}, head), h("tbody", {}, ...body)),
    h("div", {
      className: "aw-muted aw-lens-caption",
      "data-testid": "lens-caption",
      text: userText(lens.caption),
    }),
  );
  box.dataset.table = String(t);
  box.dataset.highlight = o.highlight === undefined ? "" : String(o.highlight);
}

/** The table's styles (each view adds them to its own CSS, scoped by its root class). */
export function lensCss(root: string): string {
  return `
${root} .aw-lens { margin-top: 8px; max-width: 19em; }
${root} .aw-lens-table { border-collapse: collapse; font-size: 0.8em; }
${root} .aw-lens-table th, ${root} .aw-lens-table td { padding: 0 4px; text-align: left; white-space: pre; }
${root} .aw-lens-table td { min-width: 3.2em; }
${root} .aw-lens-label { color: var(--aw-muted); font-weight: normal; }
${root} .aw-lens-table tr.aw-lens-on { outline: 2px solid var(--aw-accent); }
${root} .aw-lens-caption { font-size: 0.75em; margin-top: 2px; }
`;
}
