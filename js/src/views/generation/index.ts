// GenerationView: a model's attention while it writes. Mirrors attnwidgets/widgets/generation.py.
// The prompt and the generated text, each key token's background the weight the current step's query gives it; a
// steps x keys heatmap (current step outlined); the step's top-k predictions. A slider, the arrow keys and a play
// button move the synced `step`. Only the first (kind, layer, head) arrives with the widget; others by request.
// Tokens of the prompt (an encoder-decoder's source) are selected with the heatmap's clicks (draw/span.ts: click,
// shift-click, ctrl/cmd-click, Escape; a drag over tokens selects the span it covers), synced as `selection` and
// `combine`; the span is underlined on the text and a panel draws, per step, the share of that step's attention
// on it (computed in Python: `_share`, viewdata/selection.py selection_share), a line per layer or head. A click
// on the panel moves the scrubber to that step.
// This file wires the parts up: state.ts (what to draw), paint.ts (the canvases), controls.ts (menus, keys, clicks).

import { type FitWatcher, fitWatcher } from "../../draw/fit";
import { roomFor } from "../../draw/heads";
import { lensCss, paintLens } from "../../draw/lens";
import * as span from "../../draw/span";
import { type Matrix, decode, replyPacked } from "../../shared/buffers";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, type WidgetModel, onModel } from "../../shared/model";
import { Requester } from "../../shared/requests";
import { userText } from "../../shared/text";
import { type Theme, applyTheme, colormapOf, theme } from "../../shared/theme";
import { scrolledCanvas, widgetShell } from "../../shared/widget_shell";
import {
  Player,
  buildControls,
  clickStep,
  stepKeys,
  stepSetter,
  syncSampling,
  textListeners,
} from "./controls";
import {
  type ShareLayout,
  type TextSpans,
  buildText,
  paintMatrix,
  paintShare,
  paintText,
  paintTopk,
} from "./paint";
import {
  type GenerationTraits,
  LENS_ROOM,
  TOPK_ROOM,
  captionText,
  finiteMax,
  mapGeometry,
  matrixRequest,
  rowAtY,
  selectable,
  selectionText,
  shareCaption,
  shareHeight,
  shareStepAt,
  shareSubject,
  shareTop,
  sharing,
  stepRow,
  titleText,
  viewKey,
} from "./state";

export type { GenerationTraits } from "./state";

type Model = WidgetModel<GenerationTraits>;

const pick = (model: Model) => ({
  kind: model.get("kind"),
  layer: model.get("layer"),
  head: model.get("head"),
});

/** The page's parts: the text, the map beside the top-k list, the span-share panel, the caption. */
function layoutParts() {
  const text = h("div", { className: "aw-gen-text", "data-testid": "gen-text" });
  const { scroll, canvas } = scrolledCanvas("steps-canvas");
  const topk = h("div", { className: "aw-topk", "data-testid": "topk" });
  const samplingBox = h("div", { className: "aw-sampling", "data-testid": "sampling-box" });
  const lens = h("div", { className: "aw-lens", "data-testid": "lens" });
  const topkColumn = h("div", {}, topk, samplingBox, lens);
  const caption = h("div", { className: "aw-muted", "data-testid": "caption", "data-export-text": "" });
  const row = h("div", { className: "aw-gen-row" }, scroll, topkColumn);
  const shareCanvas = h("canvas", { className: "aw-canvas", "data-testid": "share-canvas" });
  const shareCaption = h("div", {
    className: "aw-muted",
    "data-testid": "share-caption",
    "data-export-text": "",
  });
  const sharePanel = h(
    "div",
    { className: "aw-share", "data-testid": "share-panel" },
    shareCaption,
    shareCanvas,
  );
  return { text, canvas, topk, samplingBox, lens, caption, row, shareCanvas, shareCaption, sharePanel };
}

/** The share panel's lines, decoded once per answer. */
function shareCache() {
  let cached: { key: string; data: Matrix } | null = null;
  return (key: string, lines: Parameters<typeof decode>[0]): Matrix => {
    if (cached?.key !== key) cached = { key, data: decode(lines) };
    return cached.data;
  };
}

/** What the view holds between paints. */
interface Held {
  matrix: Matrix | null;
  matrixKey: string;
  probs: Matrix | null;
  lensProbs: Matrix | null; // (steps, layers + 1, k): the logit lens, when the generation kept it
  spans: TextSpans;
  slider: HTMLInputElement | null;
  mapLayout: { y0: number; cellH: number; rows: number };
  shareLayout: ShareLayout;
}

/** One view's model, its element, its parts and what it holds: what the paint steps below read. */
interface Ctx {
  model: Model;
  el: HTMLElement;
  fit: FitWatcher;
  parts: ReturnType<typeof layoutParts>;
  held: Held;
  shareData: ReturnType<typeof shareCache>;
}

/** The matrix of the view on screen (null: not here yet). */
const shown = ({ model, held }: Ctx) =>
  held.matrix && held.matrixKey === viewKey(pick(model)) ? held.matrix : null;

function paintTextStep(c: Ctx): void {
  const { model } = c;
  const m = shown(c);
  paintText(c.parts.text, c.held.spans, {
    t: theme(model.get("theme")),
    m: model.get("_meta"),
    step: model.get("step"),
    kind: model.get("kind"),
    weights: m ? stepRow(m, model.get("step")) : null,
    vmax: m ? finiteMax(m.data) : 0, // one colour scale with the map, so a token's shade and its cell agree
    map: colormapOf(model),
    selection: model.get("selection") ?? [],
    view: viewKey(pick(model)),
  });
}

function paintMap(c: Ctx, t: Theme): void {
  const { model, parts } = c;
  const m = model.get("_meta");
  const keys = m.keys[model.get("kind")] ?? [];
  // fitted: the steps x keys map beside the top-k list, inside the box (with the span-share panel under it)
  const panel = sharing(model.get("selection"), model.get("_share"), model.get("share_by"));
  const room = c.fit.room(panel ? [parts.row, parts.sharePanel] : parts.row);
  const g = mapGeometry({
    rows: m.generated.length,
    cols: keys.length,
    font: t.font,
    maxCell: t.maxCell,
    maxGrid: t.maxGrid,
    roomW: roomFor(c.el),
    fitted: room,
    panelH: room && panel ? shareHeight(t.name, room.height) + t.font * 3.5 : 0,
    side: model.get("lens") && model.get("_payload").lens ? LENS_ROOM : TOPK_ROOM,
    thin: t.name === "lecture",
  });
  c.held.mapLayout = { y0: g.y0, cellH: g.cellH, rows: m.generated.length };
  paintMatrix(parts.canvas, {
    t,
    g,
    matrix: shown(c),
    map: colormapOf(model),
    rowLabels: m.generated,
    colLabels: keys,
    step: model.get("step"),
    view: viewKey(pick(model)),
  });
}

/** The span-share panel, hidden when nothing is selected; Python's error in its caption. */
function paintSharePanel(c: Ctx, t: Theme): void {
  const { model, parts } = c;
  const share = model.get("_share") ?? {};
  const selection = model.get("selection") ?? [];
  const { sharePanel, shareCanvas } = parts;
  if (!sharing(selection, share, model.get("share_by")) || !share.key) {
    sharePanel.style.display = "none";
    shareCanvas.dataset.key = "";
    return;
  }
  sharePanel.style.display = "";
  const meta = model.get("_meta");
  const what = userText(
    shareSubject(meta.roles ?? [], model.get("share_by"), selectionText(selectable(meta), selection)),
  );
  if (share.error) {
    parts.shareCaption.textContent = `${what}: ${share.error}`;
    shareCanvas.style.display = "none";
    Object.assign(shareCanvas.dataset, { key: share.key, lines: "0" });
    return;
  }
  shareCanvas.style.display = "";
  if (!share.lines) return;
  const data = c.shareData(share.key, share.lines);
  const sum = (model.get("combine") || "sum") === "sum";
  parts.shareCaption.textContent = shareCaption(what, sum, model.get("share_by"), model.get("layer"));
  const fitted = c.fit.room([parts.row, parts.sharePanel]);
  c.held.shareLayout = paintShare(shareCanvas, {
    t,
    data,
    labels: share.labels ?? [],
    ymax: shareTop(data.data, sum),
    step: model.get("step"),
    width: Math.max(260, Math.min(t.maxGrid + TOPK_ROOM - 60, roomFor(c.el) - 24)),
    height: shareHeight(t.name, fitted ? fitted.height : null),
    key: share.key,
  });
}

/** Everything: the title, the text, the map, the top-k list, the share panel, the caption. */
function paintAll(c: Ctx, root: HTMLElement, title: HTMLElement): void {
  const { model, held } = c;
  const t = theme(model.get("theme"));
  applyTheme(root, t);
  const m = model.get("_meta");
  const step = model.get("step");
  if (held.slider) {
    held.slider.value = String(step);
    held.slider.max = String(Math.max(0, m.generated.length - 1));
  }
  title.textContent = titleText(m, step);
  paintTextStep(c);
  paintMap(c, t);
  const sampling = model.get("sampling")
    ? {
        temperature: model.get("temperature"),
        top_k: model.get("top_k"),
        top_p: model.get("top_p"),
        min_p: model.get("min_p"),
      }
    : null;
  paintTopk(c.parts.topk, m, held.probs, step, sampling);
  paintLens(c.parts.lens, model.get("_payload").lens, held.lensProbs, step, {
    show: Boolean(model.get("lens")),
    heading: "logit lens, by layer",
  });
  paintSharePanel(c, t);
  c.parts.caption.textContent = captionText(m, { ...pick(model), step });
}

/** The matrix of the view the traits name: from the payload, or asked for (a saved page answers offline). */
async function ensureMatrix(c: Ctx, requests: Requester<GenerationTraits>, showError: (msg: string) => void) {
  const { model, held } = c;
  const key = viewKey(pick(model));
  if (held.matrix && held.matrixKey === key) return;
  const payload = model.get("_payload");
  if (payload.key === key) {
    held.matrix = decode(payload.matrix);
    held.matrixKey = key;
    return;
  }
  try {
    const reply = await requests.get(key, matrixRequest(pick(model)));
    if (viewKey(pick(model)) !== key) return;
    held.matrix = decode(replyPacked(reply.content, reply.buffers[0]));
    held.matrixKey = key;
    showError("");
  } catch (e) {
    showError(String((e as Error).message ?? e));
  }
}

function render({ model, el }: RenderProps<GenerationTraits>): () => void {
  const shell = widgetShell(model, el, "aw-generation", CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const parts = layoutParts();
  root.append(title, bar, errorBox, parts.text, parts.row, parts.sharePanel, parts.caption);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);
  const requests = new Requester(model);
  cleanups.push(() => requests.dispose());
  const controls = controlGroup(cleanups); // the bar's listeners: removed when it is rebuilt and at teardown
  const held: Held = {
    matrix: null,
    matrixKey: "",
    probs: null,
    lensProbs: null,
    spans: [[], []],
    slider: null,
    mapLayout: { y0: 0, cellH: 1, rows: 0 },
    shareLayout: { x0: 0, y0: 0, w: 0, h: 0, steps: 0 },
  };
  const c: Ctx = { model, el, fit, parts, held, shareData: shareCache() };
  const picker = new span.SpanSelector(model);
  const setStep = stepSetter(model);
  const player = new Player(model, setStep);
  cleanups.push(() => player.stop());
  const paint = () => paintAll(c, root, title);
  const rebuildControls = () => {
    held.slider = buildControls(model, bar, controls, {
      player,
      setStep,
      picker,
      exportControls: shell.exportControls,
      samplingBox: parts.samplingBox,
    });
  };
  const refresh = () => {
    paint();
    ensureMatrix(c, requests, showError).then(paint);
  };
  function load(): void {
    try {
      const payload = model.get("_payload");
      held.probs = decode(payload.topk_probs);
      held.lensProbs = payload.lens ? decode(payload.lens.probs) : null;
      held.matrix = null;
      held.matrixKey = "";
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    rebuildControls();
    held.spans = buildText(parts.text, model.get("_meta"));
    refresh();
  }

  const controlsThen = (then: () => void) => () => {
    rebuildControls();
    then();
  };
  for (const trait of ["step", "colormap", "_share", "selection"])
    cleanups.push(onModel(model, `change:${trait}`, paint));
  for (const trait of ["temperature", "top_k", "top_p", "min_p"])
    cleanups.push(
      onModel(model, `change:${trait}`, () => {
        syncSampling(model, parts.samplingBox);
        paint();
      }),
    );
  for (const trait of ["theme", "share_by", "combine", "sampling", "lens"])
    cleanups.push(onModel(model, `change:${trait}`, controlsThen(paint)));
  for (const trait of ["kind", "layer", "head"])
    cleanups.push(onModel(model, `change:${trait}`, controlsThen(refresh)));
  const goTo = (s: number) => {
    player.stop();
    setStep(s);
  };
  cleanups.push(
    onModel(model, "change:_payload", load),
    onModel(model, "change:_meta", load),
    ...textListeners(model, parts.text, picker),
    clickStep(parts.shareCanvas, (x) => shareStepAt(held.shareLayout, x), goTo),
    stepKeys(model, root, { picker, player, setStep, slider: () => held.slider }),
    clickStep(parts.canvas, (_, y) => rowAtY(held.mapLayout, y), setStep),
  );
  load();
  return shell.close;
}

const CSS = `
.aw-generation .aw-gen-text { line-height: 1.9; max-width: 100%; margin: 4px 0 8px; }
.aw-generation .aw-gen-line { margin: 2px 0; white-space: normal; }
.aw-generation .aw-gen-label { color: var(--aw-muted); margin-right: 6px; }
.aw-generation .aw-tok { padding: 1px 2px; border-radius: 3px; white-space: pre; border: 2px solid transparent; }
.aw-generation .aw-tok.aw-future { color: var(--aw-muted); opacity: 0.8; }
.aw-generation .aw-tok.aw-current { border-color: var(--aw-accent); font-weight: 700; }
.aw-generation .aw-gen-row { display: flex; gap: 18px; align-items: flex-start; flex-wrap: wrap; }
.aw-generation .aw-topk { min-width: 180px; }
.aw-generation .aw-topk-row { display: flex; gap: 6px; align-items: center; margin: 2px 0; }
.aw-generation .aw-topk-bar { height: 0.8em; background: var(--aw-accent); opacity: 0.7; }
.aw-generation .aw-topk-row.aw-chosen { font-weight: 700; }
.aw-generation .aw-topk-bars { display: inline-flex; flex-direction: column; gap: 1px; width: 120px; }
.aw-generation .aw-topk-before { height: 0.3em; border: 1px solid var(--aw-muted); box-sizing: border-box; }
.aw-generation .aw-topk-row.aw-cut { color: var(--aw-muted); }
.aw-generation .aw-topk-row.aw-cut .aw-topk-bar { opacity: 0.3; }
.aw-generation .aw-sampling { margin-top: 8px; }
.aw-generation .aw-sampling-row { display: flex; gap: 6px; align-items: center; }
.aw-generation .aw-sampling-row > span:first-child { min-width: 6.5em; }
.aw-generation input[type=range] { width: 220px; }
.aw-generation .aw-tok[data-pos] { cursor: pointer; user-select: none; }
.aw-generation .aw-tok.aw-sel { box-shadow: inset 0 -4px 0 var(--aw-accent); }
.aw-generation .aw-share { margin-top: 8px; }
${lensCss(".aw-generation")}`;

export default { render };
