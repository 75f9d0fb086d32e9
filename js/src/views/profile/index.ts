// AttentionProfile: the document itself, each key token (or sentence, or paragraph) coloured by the attention it
// receives from a query span. Mirrors attnwidgets/widgets/profile.py. The text is built once per document in one
// DOM pass (a span per token, text set with textContent); a new profile only recolours the spans. One listener on
// the text box serves every token (event delegation). A strip above the text shows the whole document at a glance
// (and is what the PNG/SVG export keeps); clicking it scrolls the text there.
// This file wires the parts up: state.ts (what to show), paint.ts (the spans and the strip), controls.ts (menus,
// hover, clicks, keys).

import { drawLegend } from "../../draw/canvas";
import type { ColorMapName } from "../../draw/colors";
import { type FitWatcher, fitWatcher } from "../../draw/fit";
import * as span from "../../draw/span";
import { hideTooltip, tooltipBox } from "../../draw/tooltip";
import { type Packed, decode, replyPacked } from "../../shared/buffers";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, type WidgetModel, onModel } from "../../shared/model";
import { Requester } from "../../shared/requests";
import { applyTheme, theme } from "../../shared/theme";
import { widgetShell } from "../../shared/widget_shell";
import { type Surface, buildControls, stripAndKeys, textListeners } from "./controls";
import { type ProfileScene, buildText, paintSpans, paintStrip } from "./paint";
import {
  type Doc,
  type ProfileTraits,
  captionText,
  pickKey,
  profileRequest,
  titleText,
  unitScale,
  unitStarts,
} from "./state";

export type { ProfileTraits } from "./state";

type Model = WidgetModel<ProfileTraits>;

const pick = (model: Model) => ({
  kind: model.get("kind"),
  layer: model.get("layer"),
  head: model.get("head"),
  selection: model.get("selection") ?? [],
  combine: model.get("combine"),
});

/** The page's parts: the strip, the legend with its caption, the text box, the tooltip. */
function layoutParts() {
  const strip = h("canvas", { className: "aw-profile-strip", "data-testid": "profile-strip" });
  const text = h("div", { className: "aw-profile-text", "data-testid": "profile-text", dir: "auto" });
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
  return { strip, text, legend, legendCanvas, legendMax, caption, tooltip: tooltipBox() };
}

/** What the view holds: the document in the text box, the profile on screen and its sums by unit. */
interface Held {
  docKind: string; // the kind whose document the text box holds
  spans: HTMLSpanElement[];
  weights: Float32Array | null; // the profile on screen (per key)
  weightsKey: string;
  scene: ProfileScene | null; // the last paint's colours
  stripWidth: number; // measured by the ResizeObserver: no forced layout
}

/** The profile for the view the traits name: from the payload, or fetched (a saved page answers offline); null when
 * the user moved on meanwhile. */
async function fetchProfile(
  model: Model,
  requester: Requester<ProfileTraits>,
): Promise<[string, Float32Array] | null> {
  const v = pick(model);
  const key = pickKey(v);
  const p = model.get("_payload");
  let packed: Packed;
  if (p.key === key) packed = p.weights;
  else {
    const reply = await requester.get(key, profileRequest(v));
    packed = replyPacked(reply.content, reply.buffers[0]);
  }
  if (pickKey(pick(model)) !== key) return null;
  return [key, decode(packed).data];
}

/** One view's model, its parts and what it holds: what the paint steps below read. */
interface Ctx {
  model: Model;
  root: HTMLElement;
  title: HTMLElement;
  parts: ReturnType<typeof layoutParts>;
  held: Held;
  fit: FitWatcher;
}

const docOf = (model: Model): Doc | undefined => model.get("_payload").docs?.[model.get("kind")];
/** Queries are the keys (not cross-attention): they can be picked in the text. */
const selfQueriesOf = (model: Model) => model.get("kind") !== "cross";
// "" is blues in both themes, not the theme's map: text is read on its colour, so the lowest weights must look
// like the page (white) and the highest stand out dark; viridis would turn a near-uniform profile into a dark wall.
const colormapOf = (model: Model) => (model.get("colormap") || "blues") as ColorMapName;

/** The strip, as wide as the text box (at least 200 px; 600 before it is measured). */
function stripNow({ model, parts, held }: Ctx): void {
  if (held.scene)
    paintStrip(
      parts.strip,
      held.scene,
      docOf(model)?.pieces.length ?? 0,
      Math.max(200, Math.floor(held.stripWidth || 600)),
    );
}

/** Colour every span by its unit's weight, the strip and the legend; mark the query and the selected region.
 * False when there is nothing to colour yet (no document or no profile). */
function paintProfile(c: Ctx): boolean {
  const { model, parts, held } = c;
  const { text } = parts;
  const t = theme(model.get("theme"));
  applyTheme(c.root, t);
  // Fitted: the text box scrolls inside what the box leaves under the strip and legend (its border and padding
  // are inside the room measured, so they come off the max-height).
  const room = c.fit.room(text);
  text.style.maxHeight = room ? `${Math.max(3 * t.font, room.height - 16)}px` : "";
  const d = docOf(model);
  if (!d || !held.weights) return false;
  if (held.docKind !== model.get("kind")) {
    held.docKind = model.get("kind");
    held.spans = buildText(text, d.pieces);
  }
  const st = unitStarts(d, model.get("unit"));
  const { values, unitOf, vmax } = unitScale(held.weights, st, d.pieces.length);
  const selection = model.get("selection") ?? [];
  const selected = model.get("selected");
  const map = colormapOf(model);
  held.scene = {
    t,
    map,
    values,
    unitOf,
    starts: st,
    vmax,
    selected,
    selection,
    showQuery: selfQueriesOf(model),
  };
  paintSpans(held.spans, held.scene);
  stripNow(c);
  drawLegend(parts.legendCanvas, map);
  parts.legendMax.textContent = vmax.toFixed(4);
  const unit = model.get("unit");
  parts.caption.textContent = captionText(d, unit, selection, model.get("combine"));
  const title = model.get("_payload").title ?? "";
  c.title.textContent = titleText(
    title,
    model.get("kind"),
    model.get("layer"),
    model.get("head"),
    d.pieces.length,
  );
  // what is drawn, for tests: the profile's key, unit, colour-scale top, unit count (and the paint's milliseconds)
  Object.assign(text.dataset, {
    view: held.weightsKey,
    unit,
    vmax: String(vmax),
    units: String(values.length),
  });
  return true;
}

function render({ model, el }: RenderProps<ProfileTraits>): () => void {
  const shell = widgetShell(model, el, "aw-profile", CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  bar.classList.add("aw-profile-bar");
  const requester = new Requester(model);
  const parts = layoutParts();
  const { text } = parts;
  root.append(title, bar, errorBox, parts.strip, parts.legend, text, parts.tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);
  const born = performance.now(); // for data-first-paint-ms: render() to the first frame with the coloured text
  let framed = false;
  const held: Held = { docKind: "", spans: [], weights: null, weightsKey: "", scene: null, stripWidth: 0 };
  const picker = new span.SpanSelector(model);
  const doc = () => docOf(model);
  const starts = () => unitStarts(doc(), model.get("unit"));
  const selfQueries = () => selfQueriesOf(model);
  const c: Ctx = { model, root, title, parts, held, fit };
  const paint = () => {
    const t0 = performance.now();
    if (!paintProfile(c)) return;
    text.dataset.paintMs = (performance.now() - t0).toFixed(1);
    if (!framed) {
      framed = true;
      requestAnimationFrame(() =>
        setTimeout(() => {
          text.dataset.firstPaintMs = (performance.now() - born).toFixed(1);
        }),
      );
    }
  };

  async function refresh(): Promise<void> {
    try {
      const got = await fetchProfile(model, requester);
      if (!got) return; // the user moved on meanwhile
      [held.weightsKey, held.weights] = got;
      showError(model.get("_error"));
      paint();
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  const surface: Surface = {
    root,
    text,
    strip: parts.strip,
    tooltip: parts.tooltip,
    doc,
    spans: () => held.spans,
    starts,
    drawn: () => (held.weights && held.scene ? { weights: held.weights, ...held.scene } : null),
    selfQueries,
  };
  cleanups.push(...textListeners(model, surface, picker), ...stripAndKeys(model, surface, picker));

  // The strip is as wide as the text box; it is drawn again when the box's width changes (the cell is resized).
  const resize = new ResizeObserver(() => {
    if (text.clientWidth === held.stripWidth) return;
    held.stripWidth = text.clientWidth;
    if (held.weights) stripNow(c);
  });
  resize.observe(text);
  cleanups.push(() => resize.disconnect());

  const controls = controlGroup(cleanups);
  const rebuildControls = () =>
    buildControls(model, bar, controls, { doc, picker, exportControls: shell.exportControls });
  const rebuild = () => {
    hideTooltip(parts.tooltip);
    rebuildControls();
    refresh();
  };
  for (const trait of ["layer", "head", "kind", "query", "selection", "combine"])
    cleanups.push(onModel(model, `change:${trait}`, rebuild));
  cleanups.push(
    onModel(model, "change:_payload", () => {
      requester.clear();
      held.docKind = "";
      rebuild();
    }),
  );
  for (const trait of ["unit", "selected", "theme", "colormap"])
    cleanups.push(
      onModel(model, `change:${trait}`, () => {
        rebuildControls();
        paint();
      }),
    );
  rebuild();

  return () => {
    shell.close();
    requester.dispose();
  };
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

export default { render };
