// AttentionProfile's controls: the attention, layer, head and unit menus, the query boxes, the span controls; hover
// and clicks on the text (one listener serves every token: event delegation), clicks on the strip, the keys.

import { traitMenu } from "../../draw/head_stats";
import * as span from "../../draw/span";
import { hideTooltip, showTooltip } from "../../draw/tooltip";
import { h, listen, resetControls, select, typedInControl } from "../../shared/dom";
import { type WidgetModel, saveTraits } from "../../shared/model";
import { type Doc, type ProfileTraits, keyAction, queryRange, tipText, unitRange } from "./state";

type Model = WidgetModel<ProfileTraits>;

/** A menu of numbers 0..n-1 (after `first`), its test id, saving `trait` on change. */
function numberMenu(
  model: Model,
  controls: Array<() => void>,
  trait: "layer" | "head",
  n: number,
  first: Array<[string, string]> = [],
): HTMLSelectElement {
  const options: Array<[string, string]> = [...first];
  for (let i = 0; i < n; i++) options.push([String(i), String(i)]);
  const sel = select(options, String(model.get(trait)), trait);
  sel.dataset.testid = `${trait}-select`;
  controls.push(listen(sel, "change", () => saveTraits(model, { [trait]: Number(sel.value) })));
  return sel;
}

/** The query span's two boxes [from, to). */
function queryBoxes(model: Model, controls: Array<() => void>, nq: number): HTMLElement {
  const [q0, q1] = model.get("query");
  const from = h("input", { type: "number", min: 0, max: nq - 1, value: q0, "aria-label": "query from" });
  const to = h("input", { type: "number", min: 1, max: nq, value: q1, "aria-label": "query to" });
  from.dataset.testid = "query-from";
  to.dataset.testid = "query-to";
  const setQuery = () => saveTraits(model, { query: queryRange(Number(from.value), Number(to.value), nq) });
  controls.push(listen(from, "change", setQuery), listen(to, "change", setQuery));
  return h(
    "label",
    {
      title:
        "query tokens [from, to); or alt-click a token, shift-click to extend, ctrl/cmd-click to add or remove",
    },
    "query",
    from,
    "–",
    to,
  );
}

/** (Re)build the toolbar (nothing before the payload says the shapes). */
export function buildControls(
  model: Model,
  bar: HTMLElement,
  controls: Array<() => void>,
  o: {
    doc: () => Doc | undefined;
    picker: span.SpanSelector;
    exportControls: (list: Array<() => void>) => HTMLElement;
  },
): void {
  resetControls(controls, bar);
  const p = model.get("_payload");
  if (!p.shapes) return;
  const kind = model.get("kind");
  const [nLayers, nHeads] = p.shapes[kind] ?? [0, 0];
  if (p.kinds.length > 1) {
    const kindSel = select(
      p.kinds.map((k) => [k, k]),
      kind,
      "attention kind",
    );
    controls.push(listen(kindSel, "change", () => saveTraits(model, { kind: kindSel.value })));
    bar.append(h("label", {}, "attention", kindSel));
  }
  const units: Array<[string, string]> = [
    ["token", "token"],
    ["sentence", "sentence"],
    ["paragraph", "paragraph"],
  ];
  bar.append(
    h("label", {}, "layer", numberMenu(model, controls, "layer", nLayers)),
    h("label", {}, "head", numberMenu(model, controls, "head", nHeads, [["-1", "mean of heads"]])),
    h("label", {}, "unit", traitMenu(model, "unit", units, "unit", controls)),
    queryBoxes(model, controls, o.doc()?.queries.length ?? 0),
    span.spanControls(model, o.picker, controls),
    o.exportControls(controls),
  );
}

/** What the listeners read from the view: its parts and what the last paint computed. */
export interface Surface {
  root: HTMLElement;
  text: HTMLElement;
  strip: HTMLCanvasElement;
  tooltip: HTMLElement;
  doc: () => Doc | undefined;
  spans: () => HTMLSpanElement[];
  starts: () => number[];
  drawn: () => { weights: Float32Array; values: Float64Array; unitOf: Int32Array } | null;
  selfQueries: () => boolean;
}

/** The key under an event (the span's data-k), or null. */
const keyAt = (e: Event): number | null => {
  const k = (e.target as HTMLElement | null)?.dataset?.k;
  return k === undefined ? null : Number(k);
};

/** The hovered unit's spans, outlined (one range at a time). */
function hoverMarks(spans: () => HTMLSpanElement[]) {
  let hovered: [number, number] | null = null;
  return (range: [number, number] | null) => {
    if (range && hovered && hovered[0] === range[0]) return;
    if (hovered) for (let k = hovered[0]; k < hovered[1]; k++) spans()[k]?.classList.remove("aw-hover");
    hovered = range;
    if (range) for (let k = range[0]; k < range[1]; k++) spans()[k]?.classList.add("aw-hover");
  };
}

/** Hover on the text shows the token's and its unit's weight; a click selects its unit, a modified click picks
 * query tokens (self-attention: alt this token alone, shift the span from the anchor, ctrl/cmd add or remove). */
export function textListeners(model: Model, v: Surface, picker: span.SpanSelector): Array<() => void> {
  const hover = hoverMarks(v.spans);
  const leave = () => {
    hideTooltip(v.tooltip);
    hover(null);
  };
  return [
    listen(v.text, "mousemove", (e: MouseEvent) => {
      const k = keyAt(e);
      const d = v.doc();
      const drawn = v.drawn();
      if (k === null || !d || !drawn) return leave();
      const u = drawn.unitOf[k];
      const range = unitRange(v.starts(), u, d.pieces.length);
      hover(range);
      const tip = tipText(
        d,
        model.get("unit"),
        k,
        drawn.weights[k],
        u,
        range,
        drawn.values[u],
        v.selfQueries(),
      );
      showTooltip(v.tooltip, v.root, e, tip, {
        k: String(k),
        value: String(drawn.weights[k]),
        unitValue: String(drawn.values[u]),
        k0: String(range[0]),
        k1: String(range[1]),
      });
    }),
    listen(v.text, "mouseleave", leave),
    listen(v.text, "click", (e: MouseEvent) => {
      const k = keyAt(e);
      const d = v.doc();
      if (k === null || !d) return;
      if ((e.shiftKey || e.altKey || e.ctrlKey || e.metaKey) && v.selfQueries()) {
        if (e.altKey) {
          picker.anchor = k;
          saveTraits(model, { selection: [k] });
        } else picker.click(k, e);
        return;
      }
      const u = v.drawn()?.unitOf[k] ?? 0;
      saveTraits(model, { selected: unitRange(v.starts(), u, d.pieces.length) });
    }),
  ];
}

/** A click on the strip scrolls the text there; the keys step the head and layer, grow the query, clear it. */
export function stripAndKeys(model: Model, v: Surface, picker: span.SpanSelector): Array<() => void> {
  return [
    listen(v.strip, "click", (e: MouseEvent) => {
      const d = v.doc();
      if (!d) return;
      const rect = v.strip.getBoundingClientRect();
      const k = Math.floor(((e.clientX - rect.left) / rect.width) * d.pieces.length);
      const spans = v.spans();
      const s = spans[Math.max(0, Math.min(spans.length - 1, k))];
      if (s) v.text.scrollTop = s.offsetTop - v.text.offsetTop - v.text.clientHeight / 3;
    }),
    listen(v.root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return; // arrows in a menu step its options, not the view
      const [nLayers, nHeads] = model.get("_payload").shapes?.[model.get("kind")] ?? [0, 0];
      const a = keyAction(e.key, e.shiftKey, {
        layer: model.get("layer"),
        head: model.get("head"),
        nLayers,
        nHeads,
        selfQueries: v.selfQueries(),
      });
      if (a === null) return;
      if ("step" in a) picker.step(a.step, v.doc()?.queries.length ?? 0);
      else if ("clear" in a)
        picker.clear(); // back to the default query ([] is it in Python)
      else saveTraits(model, a);
      e.preventDefault();
    }),
  ];
}
