// AttentionProfile: the document itself, each key token (or sentence, or paragraph) coloured by the attention it
// receives from a query span. Mirrors attnwidgets/widgets/profile.py. The text is built once per document in one
// DOM pass (a span per token, text set with textContent); a new profile only recolours the spans. One listener on
// the text box serves every token (event delegation). A strip above the text shows the whole document at a glance
// (and is what the PNG/SVG export keeps); clicking it scrolls the text there.

import { type Packed, decode, replyPacked } from "./shared/buffers";
import { type ColorMapName, lut, lutIndex } from "./shared/colors";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import { drawLegend, prepareCanvas } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { type RenderProps, type WidgetModel, onModel, saveTraits } from "./shared/model";
import { docText, inkFor, stripColumns, unitIndex, unitRange, unitSums } from "./shared/profile";
import { Requester } from "./shared/requests";
import { typedInControl } from "./shared/selection";
import * as span from "./shared/span";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { hideTooltip, showTooltip, tooltipBox } from "./shared/tooltip";
import { widgetShell } from "./shared/widget_shell";

type Unit = "token" | "sentence" | "paragraph";

/** One kind's document: key tokens as they read, query tokens, first token of each sentence and paragraph. */
interface Doc {
  pieces: string[];
  queries: string[];
  sentence: number[];
  paragraph: number[];
}

/** Python traits of AttentionProfile (attnwidgets/widgets/profile.py). */
export interface ProfileTraits {
  layer: number;
  head: number; // -1: mean over the layer's heads
  kind: string;
  query: [number, number]; // [start, stop) of the query span
  unit: Unit;
  selected: number[]; // [] or [k0, k1)
  selection: number[]; // the query tokens (sorted, never empty; `query` is the span that covers them)
  combine: string; // "mean" | "sum" of their rows
  theme: string;
  colormap: string;
  _payload:
    | {
        title: string;
        kinds: string[];
        shapes: Record<string, [number, number]>;
        docs: Record<string, Doc>;
        key: string;
        weights: Packed;
      }
    | Record<string, never>;
  _error: string;
}

/** The name of a profile, the same as AttentionProfile._key: the query tokens as runs "a:b,c:d" and the combine. */
export function profileKey(
  kind: string,
  layer: number,
  head: number,
  selection: number[],
  combine: string,
): string {
  return `${kind}/${layer}/${head}/${span.selectionKey(selection)}/${combine}`;
}

const CSS = `
.aw-profile { display: block; }
.aw-profile-text { white-space: pre-wrap; overflow-wrap: anywhere; overflow-y: auto; line-height: 1.7;
  max-height: min(52vh, 440px); border: 1px solid var(--aw-muted); border-radius: 3px; padding: 6px 8px;
  margin-top: 6px; unicode-bidi: isolate; contain: content; }
.aw-profile-text span { border-radius: 2px; cursor: pointer; padding: 1px 0; }
.aw-profile-text span.aw-q { outline: 2px solid var(--aw-accent); outline-offset: 0; font-weight: 700; }
.aw-profile-text span.aw-sel { box-shadow: inset 0 -3px 0 var(--aw-accent); }
.aw-profile-text span.aw-hover { outline: 1px dashed var(--aw-fg); }
.aw-profile-bar input[type=number] { width: 6em; font: inherit; }
.aw-profile-strip { display: block; cursor: pointer; margin-top: 4px; }
`;

function render({ model, el }: RenderProps<ProfileTraits>): () => void {
  const shell = widgetShell(model, el, "aw-profile", CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  bar.classList.add("aw-profile-bar");
  const requester = new Requester(model);
  const strip = h("canvas", { className: "aw-profile-strip", "data-testid": "profile-strip" });
  const text = h("div", { className: "aw-profile-text", "data-testid": "profile-text", dir: "auto" });
  const tooltip = tooltipBox();
  const legendCanvas = h("canvas");
  const legendMax = h("span", { className: "aw-muted", "data-export-text": true });
  const caption = h("span", { className: "aw-muted", "data-export-text": true, "data-testid": "caption" });
  const legend = h(
    "div",
    { className: "aw-legend" },
    h("span", { className: "aw-muted", text: "0", "data-export-text": true }),
    legendCanvas,
    legendMax,
    caption,
  );
  root.append(title, bar, errorBox, strip, legend, text, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  const born = performance.now(); // for data-first-paint-ms: render() to the first frame with the coloured text
  let framed = false;
  const payload = () => model.get("_payload");
  let docKind = ""; // the kind whose document the text box holds
  let spans: HTMLSpanElement[] = [];
  let weights: Float32Array | null = null; // the profile on screen (per key)
  let weightsKey = "";
  let values: Float64Array = new Float64Array(0); // per unit
  let unitOf: Int32Array = new Int32Array(0);
  let vmax = 1;
  let hovered: [number, number] | null = null;
  const picker = new span.SpanSelector(model);

  const doc = (): Doc | undefined => payload().docs?.[model.get("kind")];
  const starts = (): number[] => {
    const d = doc();
    if (!d) return [];
    const unit = model.get("unit");
    return unit === "token" ? d.pieces.map((_, i) => i) : d[unit];
  };
  const selfQueries = () => model.get("kind") !== "cross"; // queries are the keys: they can be picked in the text

  /** The text box: one span per key token, built in one pass into a fragment. */
  function buildText(): void {
    const d = doc();
    docKind = model.get("kind");
    const frag = document.createDocumentFragment();
    spans = [];
    for (let k = 0; k < (d?.pieces.length ?? 0); k++) {
      const s = document.createElement("span");
      s.textContent = docText(d?.pieces[k] ?? "");
      s.dataset.k = String(k);
      frag.append(s);
      spans.push(s);
    }
    text.replaceChildren(frag);
  }

  const controls = controlGroup(cleanups);
  function buildControls(): void {
    resetControls(controls, bar);
    const p = payload();
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
    const layerSel = select(
      Array.from({ length: nLayers }, (_, i): [string, string] => [String(i), String(i)]),
      String(model.get("layer")),
      "layer",
    );
    layerSel.dataset.testid = "layer-select";
    controls.push(listen(layerSel, "change", () => saveTraits(model, { layer: Number(layerSel.value) })));
    const heads: Array<[string, string]> = [["-1", "mean of heads"]];
    for (let i = 0; i < nHeads; i++) heads.push([String(i), String(i)]);
    const headSel = select(heads, String(model.get("head")), "head");
    headSel.dataset.testid = "head-select";
    controls.push(listen(headSel, "change", () => saveTraits(model, { head: Number(headSel.value) })));
    const unitSel = select(
      [
        ["token", "token"],
        ["sentence", "sentence"],
        ["paragraph", "paragraph"],
      ],
      model.get("unit"),
      "unit",
    );
    unitSel.dataset.testid = "unit-select";
    controls.push(listen(unitSel, "change", () => saveTraits(model, { unit: unitSel.value as Unit })));
    const nq = doc()?.queries.length ?? 0;
    const [q0, q1] = model.get("query");
    const from = h("input", { type: "number", min: 0, max: nq - 1, value: q0, "aria-label": "query from" });
    const to = h("input", { type: "number", min: 1, max: nq, value: q1, "aria-label": "query to" });
    from.dataset.testid = "query-from";
    to.dataset.testid = "query-to";
    const setQuery = () => {
      const a = Math.max(0, Math.min(nq - 1, Math.round(Number(from.value))));
      const b = Math.max(a + 1, Math.min(nq, Math.round(Number(to.value))));
      saveTraits(model, { query: [a, b] });
    };
    controls.push(listen(from, "change", setQuery), listen(to, "change", setQuery));
    bar.append(
      h("label", {}, "layer", layerSel),
      h("label", {}, "head", headSel),
      h("label", {}, "unit", unitSel),
      h(
        "label",
        {
          title:
            "query tokens [from, to); or alt-click a token, shift-click to extend, ctrl/cmd-click to add or remove",
        },
        "query",
        from,
        "–",
        to,
      ),
      span.spanControls(model, picker, controls),
      shell.exportControls(controls),
    );
  }

  // "" is blues in both themes, not the theme's map: text is read on its colour, so the lowest weights must look
  // like the page (white) and the highest stand out dark; viridis would turn a near-uniform profile into a dark wall.
  const colormap = () => (model.get("colormap") || "blues") as ColorMapName;

  /** Colour every span by its unit's weight; mark the query span and the selected region. */
  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    // Fitted: the text box scrolls inside what the box leaves under the strip and legend (its border and padding
    // are inside the room measured, so they come off the max-height).
    const room = fit.room(text);
    text.style.maxHeight = room ? `${Math.max(3 * t.font, room.height - 16)}px` : "";
    const d = doc();
    if (!d || !weights) return;
    const t0 = performance.now();
    if (docKind !== model.get("kind")) buildText();
    const st = starts();
    values = unitSums(weights, st);
    unitOf = unitIndex(st, d.pieces.length);
    vmax = 0;
    for (const v of values) if (v > vmax) vmax = v;
    vmax ||= 1;
    const table = lut(colormap());
    const sel = model.get("selected");
    const picked = new Set(model.get("selection") ?? []);
    const showQuery = selfQueries();
    for (let k = 0; k < spans.length; k++) {
      const i = lutIndex(values[unitOf[k]], vmax) * 3;
      const s = spans[k];
      s.style.backgroundColor = `rgb(${table[i]},${table[i + 1]},${table[i + 2]})`;
      s.style.color = inkFor(table[i], table[i + 1], table[i + 2]);
      s.classList.toggle("aw-q", showQuery && picked.has(k));
      s.classList.toggle("aw-sel", sel.length === 2 && k >= sel[0] && k < sel[1]);
    }
    paintStrip();
    drawLegend(legendCanvas, colormap());
    legendMax.textContent = vmax.toFixed(4);
    const unit = model.get("unit");
    const queries = d.queries.map((q) => q.trim());
    const from = span.spanCaption(queries, model.get("selection") ?? [], model.get("combine") || "mean");
    caption.textContent = `attention per ${unit} from the ${userText(from)}`;
    const head = model.get("head");
    title.textContent = `${userText(payload().title ?? "")} · ${model.get("kind")} attention · layer ${model.get(
      "layer",
    )} · ${head < 0 ? "mean of heads" : `head ${head}`} · ${d.pieces.length} tokens`;
    // what is drawn, for tests: the profile's key, unit, colour-scale top, unit count, and the paint's milliseconds
    Object.assign(text.dataset, {
      view: weightsKey,
      unit,
      vmax: String(vmax),
      units: String(values.length),
      paintMs: (performance.now() - t0).toFixed(1),
    });
    if (!framed) {
      framed = true;
      requestAnimationFrame(() =>
        setTimeout(() => {
          text.dataset.firstPaintMs = (performance.now() - born).toFixed(1);
        }),
      );
    }
  }

  function paintStrip(): void {
    const t = theme(model.get("theme"));
    const d = doc();
    const width = Math.max(200, Math.floor(stripWidth || 600)); // measured by the ResizeObserver: no forced layout
    const height = t.font + 14;
    const ctx = prepareCanvas(strip, width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, width, height);
    const n = d?.pieces.length ?? 0;
    const cols = stripColumns(values, starts(), n, width);
    const table = lut(colormap());
    for (let x = 0; x < width; x++) {
      const i = lutIndex(cols[x], vmax) * 3;
      ctx.fillStyle = `rgb(${table[i]},${table[i + 1]},${table[i + 2]})`;
      ctx.fillRect(x, 0, 1, height - 6);
    }
    const at = (k: number) => (k / Math.max(1, n)) * width;
    ctx.fillStyle = t.accent;
    if (selfQueries())
      for (const [q0, q1] of span.spanRuns(model.get("selection") ?? []))
        ctx.fillRect(at(q0), height - 5, Math.max(2, at(q1) - at(q0)), 5);
    const sel = model.get("selected");
    if (sel.length === 2) {
      ctx.strokeStyle = t.accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(at(sel[0]) + 1, 1, Math.max(2, at(sel[1]) - at(sel[0]) - 2), height - 8);
    }
    strip.dataset.width = String(width);
  }

  /** The profile for the view the traits name: from the payload, or fetched (a saved page answers offline). */
  async function refresh(): Promise<void> {
    const kind = model.get("kind");
    const selection = model.get("selection") ?? [];
    const combine = model.get("combine") || "mean";
    const now = () =>
      profileKey(
        model.get("kind"),
        model.get("layer"),
        model.get("head"),
        model.get("selection") ?? [],
        combine,
      );
    const key = now();
    const p = payload();
    try {
      let packed: Packed;
      if (p.key === key) packed = p.weights;
      else {
        const reply = await requester.get(key, {
          what: "profile",
          kind,
          layer: model.get("layer"),
          head: model.get("head"),
          selection,
          combine,
        });
        packed = replyPacked(reply.content, reply.buffers[0]);
      }
      if (now() !== key || combine !== (model.get("combine") || "mean")) return; // the user moved on meanwhile
      weights = decode(packed).data;
      weightsKey = key;
      showError(model.get("_error"));
      paint();
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  const keyAt = (e: Event): number | null => {
    const target = e.target as HTMLElement | null;
    const k = target?.dataset?.k;
    return k === undefined ? null : Number(k);
  };

  function hover(range: [number, number] | null): void {
    if (hovered) for (let k = hovered[0]; k < hovered[1]; k++) spans[k]?.classList.remove("aw-hover");
    hovered = range;
    if (range) for (let k = range[0]; k < range[1]; k++) spans[k]?.classList.add("aw-hover");
  }

  cleanups.push(
    listen(text, "mousemove", (e: MouseEvent) => {
      const k = keyAt(e);
      const d = doc();
      if (k === null || !d || !weights) {
        hideTooltip(tooltip);
        hover(null);
        return;
      }
      const unit = model.get("unit");
      const u = unitOf[k];
      const range = unitRange(starts(), u, d.pieces.length);
      if (!hovered || hovered[0] !== range[0]) hover(range);
      const token = `${userText(d.pieces[k])} (key ${k}): ${weights[k].toFixed(4)}`;
      const whole =
        unit === "token"
          ? ""
          : `\n${unit} ${u + 1} (keys ${range[0]}–${range[1] - 1}): ${values[u].toFixed(4)}`;
      const hint = selfQueries() ? "\nclick: select · shift-click: make it the query" : "\nclick: select";
      showTooltip(tooltip, root, e, `${token}${whole}${hint}`, {
        k: String(k),
        value: String(weights[k]),
        unitValue: String(values[u]),
        k0: String(range[0]),
        k1: String(range[1]),
      });
    }),
    listen(text, "mouseleave", () => {
      hideTooltip(tooltip);
      hover(null);
    }),
    listen(text, "click", (e: MouseEvent) => {
      const k = keyAt(e);
      const d = doc();
      if (k === null || !d) return;
      if ((e.shiftKey || e.altKey || e.ctrlKey || e.metaKey) && selfQueries()) {
        // The query tokens (a plain click picks keys here): alt: this token alone; shift: the span from the anchor
        // to it; ctrl/cmd: add or remove it (shared/span.ts)
        if (e.altKey) {
          picker.anchor = k;
          saveTraits(model, { selection: [k] });
        } else picker.click(k, e);
        return;
      }
      const range = unitRange(starts(), unitOf[k], d.pieces.length);
      saveTraits(model, { selected: range });
    }),
    listen(strip, "click", (e: MouseEvent) => {
      const d = doc();
      if (!d) return;
      const rect = strip.getBoundingClientRect();
      const k = Math.floor(((e.clientX - rect.left) / rect.width) * d.pieces.length);
      const s = spans[Math.max(0, Math.min(spans.length - 1, k))];
      if (s) text.scrollTop = s.offsetTop - text.offsetTop - text.clientHeight / 3;
    }),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return; // arrows in a menu step its options, not the view
      const [nLayers, nHeads] = payload().shapes?.[model.get("kind")] ?? [0, 0];
      const layer = model.get("layer");
      const head = model.get("head");
      if (e.shiftKey && (e.key === "ArrowDown" || e.key === "ArrowUp") && selfQueries())
        picker.step(e.key === "ArrowDown" ? 1 : -1, doc()?.queries.length ?? 0); // grow or shrink the query span
      else if (e.key === "ArrowRight") saveTraits(model, { head: Math.min(nHeads - 1, head + 1) });
      else if (e.key === "ArrowLeft") saveTraits(model, { head: Math.max(-1, head - 1) });
      else if (e.key === "ArrowDown") saveTraits(model, { layer: Math.min(nLayers - 1, layer + 1) });
      else if (e.key === "ArrowUp") saveTraits(model, { layer: Math.max(0, layer - 1) });
      else if (e.key === "Escape")
        picker.clear(); // back to the default query ([] is it in Python)
      else return;
      e.preventDefault();
    }),
  );

  // The strip is as wide as the text box; it is drawn again when the box's width changes (the cell is resized).
  let stripWidth = 0;
  const resize = new ResizeObserver(() => {
    if (text.clientWidth === stripWidth) return;
    stripWidth = text.clientWidth;
    if (weights) paintStrip();
  });
  resize.observe(text);
  cleanups.push(() => resize.disconnect());

  const rebuild = () => {
    hideTooltip(tooltip);
    buildControls();
    refresh();
  };
  for (const ev of [
    "change:layer",
    "change:head",
    "change:kind",
    "change:query",
    "change:selection",
    "change:combine",
  ])
    cleanups.push(onModel(model as WidgetModel<ProfileTraits>, ev, rebuild));
  cleanups.push(
    onModel(model, "change:_payload", () => {
      requester.clear();
      docKind = "";
      rebuild();
    }),
  );
  for (const ev of ["change:unit", "change:selected", "change:theme", "change:colormap"])
    cleanups.push(
      onModel(model as WidgetModel<ProfileTraits>, ev, () => {
        buildControls();
        paint();
      }),
    );
  rebuild();

  return () => {
    shell.close();
    requester.dispose();
  };
}

export default { render };
