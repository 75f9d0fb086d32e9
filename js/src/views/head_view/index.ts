// HeadView: bertviz's line view on a canvas. Query tokens left, key tokens right, one line per (head, query, key)
// with opacity = weight and one colour per head. Mirrors attnwidgets/widgets/head_view.py. One layer crosses at a
// time, as sparse rows of the weights >= min_weight (shared/lines.ts), fetched by "layer" request when chosen and
// kept in the page.
//
// At 512 tokens a layer has 12 x 512 x 512 = 3 million possible lines. We draw lines lighter than `min_weight`
// never, and when there are more than 128 tokens and nothing is hovered or selected only lines of weight >= 0.1;
// the lines are drawn into the canvas's pixels by hand (draw/line_raster.ts; Chromium's own rasterising of them
// was most of the view's first paint).
//
// A long input (more than 512 tokens, or a lazy result: `_meta.long`) is drawn a `window` at a time: the payload
// holds the window's query rows, its keys and a few "far" keys outside it (attnwidgets/viewdata/windows.py), with a
// `window` description saying which token each row and column is. The ◀ ▶ buttons (Page Up / Page Down) move it.
// Heads that share a key/value head (GQA: `_meta.n_kv_heads` < heads) are outlined together in the swatch bar.
// This file wires the parts up: state.ts (what to draw), paint.ts (the canvas), controls.ts (toolbar, swatches, keys).

import { fitWatcher } from "../../draw/fit";
import { controlGroup, h } from "../../shared/dom";
import { type LinePayload, type LineRows, payloadFromReply, toRows } from "../../shared/lines";
import { type RenderProps, type WidgetModel, onModel, saveTraits } from "../../shared/model";
import { Requester } from "../../shared/requests";
import { applyTheme, theme } from "../../shared/theme";
import { scrolledCanvas, widgetShell } from "../../shared/widget_shell";
import { Swatches, buildControls, canvasListeners, revealRow } from "./controls";
import { type Drawn, type Scene, paintScene, sceneLayout } from "./paint";
import {
  type Columns,
  type Geo,
  type HeadViewPick,
  type HeadViewTraits,
  type Hit,
  type LevelLabels,
  type WindowInfo,
  columnsOf,
  complete,
  isWindowed,
  layerRequest,
  selectedRows,
  titleText,
  tokenAt,
  viewKey,
  windowColumns,
} from "./state";

export type { HeadViewTraits } from "./state";

const HINT =
  "hover a token · click left tokens to select (shift: a span, ctrl/cmd: add or remove) · click a swatch to toggle a head, double-click to " +
  "isolate · keys: ↑ ↓ layer, ← → one head at a time";

const pickOf = (model: WidgetModel<HeadViewTraits>): HeadViewPick => ({
  kind: model.get("kind"),
  layer: model.get("layer"),
  words: model.get("words"),
  window: model.get("window"),
});

/** The canvas's data attributes (for tests): what is drawn, where, and how many lines. */
function drawnDataset(
  model: WidgetModel<HeadViewTraits>,
  data: { key: string; rows: LineRows } | null,
  win: WindowInfo | null,
  hover: Hit | null,
  d: Drawn,
): Record<string, string> {
  const c = d.counts;
  return {
    view: data?.key ?? "",
    floor: String(data?.rows.floor ?? ""),
    lines: String(d.drawn),
    linesAll: String(c[0] + c[1] + c[2] + c[3]),
    linesAa: String(c[0]),
    linesAb: String(c[1]),
    linesBa: String(c[2]),
    linesBb: String(c[3]),
    filter: model.get("sentence_filter"),
    window: win ? `${win.q[0]}-${win.q[1]}` : "",
    keyWindow: win ? `${win.k[0]}-${win.k[1]}` : "",
    far: win ? win.far.join(",") : "",
    hover: hover ? `${hover.side}${hover.i}` : "",
    heads: model.get("heads").join(","),
    selected: model.get("selected").join(","),
    top: String(d.geo.top),
    rowH: String(d.geo.rowH),
    xl: String(d.geo.xl),
    xr: String(d.geo.xr),
    nq: String(d.nq),
    nk: String(d.nk),
  };
}

/** A layer's lines and its labels: from the first payload when it holds them all, else by request. */
class LayerSource {
  // Word-level labels of every kind: from _payload or a "labels" request (a saved page answers it offline).
  wordLabels: LevelLabels | null = null;

  constructor(
    private readonly model: WidgetModel<HeadViewTraits>,
    private readonly requester: Requester<HeadViewTraits>,
  ) {}

  async labelsFor(k: string, words: boolean): Promise<Columns> {
    if (words && !this.wordLabels) {
      const reply = await this.requester.get("labels/w", { what: "labels", words: true });
      this.wordLabels = reply.content as unknown as LevelLabels;
    }
    return columnsOf(words ? this.wordLabels : this.model.get("_meta"), k);
  }

  /** The lines, labels and window of the layer `key` names; `error` is Python's after a request (else null). */
  async fetch(
    key: string,
  ): Promise<{ payload: LinePayload; labels: Columns; win: WindowInfo | null; error: string | null }> {
    const model = this.model;
    const pick = pickOf(model);
    const initial = model.get("_payload");
    const first = initial && "key" in initial && initial.key === key ? initial : null;
    if (first?.labels) this.wordLabels ??= first.labels;
    if (first && complete(first.heads.floor, model.get("min_weight"))) {
      const win = (first.heads as { window?: WindowInfo }).window ?? null;
      return { payload: first.heads, labels: await this.labelsFor(pick.kind, pick.words), win, error: null };
    }
    // The cache key carries min_weight: a lower one needs a payload with a lower floor.
    const [labels, reply] = await Promise.all([
      this.labelsFor(pick.kind, pick.words),
      this.requester.get(`${key}/${model.get("min_weight")}`, layerRequest(model.get("_meta"), pick)),
    ]);
    const win = (reply.content.window as WindowInfo | undefined) ?? null;
    const payload = payloadFromReply(reply.content, reply.buffers);
    return { payload, labels, win, error: model.get("_error") };
  }
}

function render({ model, el }: RenderProps<HeadViewTraits>): () => void {
  const shell = widgetShell(model, el, "aw-head-view", HEAD_VIEW_CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const requester = new Requester(model);
  const swatchBar = h("div", { className: "aw-bar", "data-testid": "head-swatches" });
  const { scroll, canvas } = scrolledCanvas("lines-canvas");
  scroll.style.maxHeight = "640px";
  const hint = h("div", { className: "aw-muted aw-hint", text: HINT });
  root.append(title, bar, swatchBar, errorBox, scroll, hint);
  hint.title = hint.textContent ?? ""; // fitted, the hint is one line: the whole of it on hover
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  // labels travel with the layer they name, so word-level lines are never drawn between token labels.
  let data: { key: string; rows: LineRows; labels: Columns; win: WindowInfo | null } | null = null;
  let hover: Hit | null = null;
  let geo: Geo = { top: 8, rowH: 16, xl: 100, xr: 360, width: 460, height: 100, posW: 0, wr: 0, pair: false };
  const meta = () => model.get("_meta");
  const windowed = () => isWindowed(meta(), pickOf(model));
  const save = (changes: Partial<HeadViewTraits>) => saveTraits(model, changes);
  /** What the columns show: the labels of the layer on screen (token level before the first one arrives). */
  const shown = (): Columns =>
    data?.labels ?? columnsOf(model.get("words") || windowed() ? null : meta(), model.get("kind"));
  const layers = new LayerSource(model, requester);
  const controls = controlGroup(cleanups);
  const toolbar = () => buildControls(model, bar, controls, save, windowed(), shell.exportControls);
  const swatches = new Swatches(swatchBar, model, controlGroup(cleanups), save);

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const win = data?.win ?? null;
    const scene: Scene = {
      t,
      cols: shown(),
      rows: data?.rows ?? null,
      win,
      heads: model.get("heads"),
      filter: model.get("sentence_filter"),
      selected: model.get("selected"),
      hover,
      minWeight: model.get("min_weight"),
    };
    const room = fit.room(scroll); // fitted: every row on screen (smaller rows, labels follow), no scrolling
    scroll.style.maxHeight = room ? "" : "640px";
    const drawn = paintScene(canvas, scene, sceneLayout(scene, room));
    geo = drawn.geo;
    Object.assign(canvas.dataset, drawnDataset(model, data, win, hover, drawn));
    title.textContent = titleText(meta(), pickOf(model), win);
  }

  /** Scroll the first selected query row into view (a window's selection may be below the fold). */
  const revealSelection = () =>
    revealRow(
      scroll,
      geo,
      selectedRows(model.get("selected"), data?.win ? data.win.q[0] : 0, data?.rows.nq ?? 0)[0],
    );

  async function refresh(): Promise<void> {
    const key = viewKey(meta(), pickOf(model));
    try {
      const got = await layers.fetch(key);
      if (got.error !== null) showError(got.error);
      if (key !== viewKey(meta(), pickOf(model))) return; // moved on meanwhile
      const labels = got.win ? windowColumns(got.labels, got.win) : got.labels;
      const rows = toRows(got.payload);
      if (rows.nq !== labels.tokens[0].length)
        throw new Error(`${rows.nq} query rows do not fit ${labels.tokens[0].length} labels`);
      data = { key, rows, labels, win: got.win };
    } catch (e) {
      showError(String((e as Error).message ?? e));
      return;
    }
    paint();
    revealSelection();
  }

  cleanups.push(
    ...canvasListeners(
      model,
      canvas,
      root,
      {
        tokenAt: (e) => {
          const r = canvas.getBoundingClientRect();
          const [queries, keys] = shown().tokens;
          const win = data?.win ?? null;
          return tokenAt(geo, queries.length, keys.length, win, e.clientX - r.left, e.clientY - r.top);
        },
        hover: () => hover,
        setHover: (hit) => {
          hover = hit;
          paint();
        },
        firstRow: () => (data?.win ? data.win.q[0] : 0), // a row of a window is token q0 + row
        windowed,
      },
      save,
    ),
  );

  const rebuild = () => {
    toolbar();
    swatches.update();
    refresh();
  };
  cleanups.push(
    onModel(model, "change:layer", rebuild),
    onModel(model, "change:window", rebuild),
    onModel(model, "change:kind", rebuild),
    onModel(model, "change:words", rebuild),
    onModel(model, "change:_meta", () => {
      requester.clear();
      layers.wordLabels = null;
      rebuild();
    }),
    onModel(model, "change:heads", () => {
      swatches.update();
      paint();
    }),
    onModel(model, "change:sentence_filter", () => {
      toolbar();
      paint();
    }),
    onModel(model, "change:selected", () => {
      paint();
      revealSelection();
    }),
    onModel(model, "change:min_weight", () => {
      if (data && complete(data.rows.floor, model.get("min_weight"))) paint();
      else refresh(); // the payload lacks the weights between the new min_weight and its floor
    }),
    onModel(model, "change:_payload", () => {
      if (data?.key !== viewKey(meta(), pickOf(model)) || !complete(data.rows.floor, model.get("min_weight")))
        refresh();
    }),
    onModel(model, "change:theme", paint),
  );
  rebuild();

  return () => {
    shell.close();
    requester.dispose();
  };
}

/** The head view's own styles: GQA groups of swatches, the window navigation. */
const HEAD_VIEW_CSS = `
.aw-kv-group { display: inline-flex; gap: 3px; align-items: center; padding: 2px 4px; border: 2px solid var(--aw-muted);
  border-radius: 6px; }
.aw-kv-caption { color: var(--aw-muted); font-size: .8em; white-space: nowrap; }
.aw-window-nav { display: inline-flex; gap: 6px; align-items: center; font-variant-numeric: tabular-nums; }
`;

export default { render };
