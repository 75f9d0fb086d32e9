// GenerationView's controls: the attention, layer and head menus, the step slider with ◀ ▶ and play, the span
// controls; drags over the text, clicks on the map and the share panel, the step keys.

import * as span from "../../draw/span";
import { h, listen, resetControls, select, typedInControl } from "../../shared/dom";
import { type WidgetModel, saveTraits } from "../../shared/model";
import { type GenerationTraits, clampStep, stepKey } from "./state";

type Model = WidgetModel<GenerationTraits>;

/** The play button's clock: one step every 700 ms until the last; the button says what a click does. */
export class Player {
  private timer: ReturnType<typeof setInterval> | null = null;
  button: HTMLButtonElement | null = null;
  constructor(
    private model: Model,
    private setStep: (step: number) => void,
  ) {}

  get playing(): boolean {
    return this.timer !== null;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.button) this.button.textContent = "▶ play";
  }

  toggle(): void {
    if (this.timer !== null) {
      this.stop();
      return;
    }
    const last = () => this.model.get("_meta").generated.length - 1;
    if (this.model.get("step") >= last()) this.setStep(0);
    if (this.button) this.button.textContent = "❚❚ pause";
    this.timer = setInterval(() => {
      if (this.model.get("step") >= last()) this.stop();
      else this.setStep(this.model.get("step") + 1);
    }, 700);
  }
}

/** Move the synced step (clamped to the steps; unchanged: no save). */
export function stepSetter(model: Model): (step: number) => void {
  return (step) => {
    const s = clampStep(step, model.get("_meta").generated.length);
    if (s !== model.get("step")) saveTraits(model, { step: s });
  };
}

/** The attention (when there are several), layer and head menus. */
function headMenus(model: Model, bar: HTMLElement, controls: Array<() => void>): void {
  const m = model.get("_meta");
  const kind = model.get("kind");
  const [nLayers, nHeads] = m.shapes[kind] ?? [1, 1];
  if (m.kinds.length > 1) {
    const kinds = select(
      m.kinds.map((k) => [k, k === "cross" ? "cross-attention" : `${k} self-attention`]),
      kind,
      "attention",
    );
    controls.push(listen(kinds, "change", () => saveTraits(model, { kind: kinds.value })));
    bar.append(h("label", {}, "attention", kinds));
  }
  const numbers = (n: number) =>
    Array.from({ length: n }, (_, i) => [String(i), String(i)] as [string, string]);
  const layers = select(numbers(nLayers), String(model.get("layer")), "layer");
  const heads = select([["-1", "mean"], ...numbers(nHeads)], String(model.get("head")), "head");
  controls.push(
    listen(layers, "change", () => saveTraits(model, { layer: Number(layers.value) })),
    listen(heads, "change", () => saveTraits(model, { head: Number(heads.value) })),
  );
  bar.append(h("label", {}, "layer", layers), h("label", {}, "head", heads));
}

/** ◀, the step slider, ▶ and play; returns the slider (paint keeps it on the step). */
function stepControls(
  model: Model,
  bar: HTMLElement,
  controls: Array<() => void>,
  player: Player,
  setStep: (step: number) => void,
): HTMLInputElement {
  const prev = h("button", { text: "◀", "aria-label": "previous step", "data-testid": "prev" });
  const next = h("button", { text: "▶", "aria-label": "next step", "data-testid": "next" });
  const play = h("button", { text: "▶ play", "aria-label": "play", "data-testid": "play" });
  player.button = play;
  const slider = h("input", {
    type: "range",
    min: 0,
    max: Math.max(0, model.get("_meta").generated.length - 1),
    step: 1,
    value: model.get("step"),
    "aria-label": "step",
    "data-testid": "step-slider",
  });
  controls.push(
    listen(prev, "click", () => setStep(model.get("step") - 1)),
    listen(next, "click", () => setStep(model.get("step") + 1)),
    listen(slider, "input", () => setStep(Number(slider.value))),
    listen(play, "click", () => player.toggle()),
  );
  bar.append(prev, slider, next, play);
  return slider;
}

/** (Re)build the toolbar; returns the step slider. */
export function buildControls(
  model: Model,
  bar: HTMLElement,
  controls: Array<() => void>,
  o: {
    player: Player;
    setStep: (step: number) => void;
    picker: span.SpanSelector;
    exportControls: (list: Array<() => void>) => HTMLElement;
    samplingBox: HTMLElement;
  },
): HTMLInputElement {
  resetControls(controls, bar);
  samplingControls(model, o.samplingBox, controls);
  headMenus(model, bar, controls);
  const slider = stepControls(model, bar, controls, o.player, o.setStep);
  const byRole: Array<[string, string]> = (model.get("_meta").roles ?? []).length
    ? [["role", "a line per role"]]
    : [];
  const by = select(
    [["layer", "a line per layer"], ["head", "a line per head"], ...byRole],
    model.get("share_by") || "layer",
    "span share lines",
  );
  by.dataset.testid = "share-by";
  controls.push(listen(by, "change", () => saveTraits(model, { share_by: by.value })));
  const playground = h("input", { type: "checkbox", "data-testid": "sampling" }) as HTMLInputElement;
  playground.checked = Boolean(model.get("sampling"));
  controls.push(listen(playground, "change", () => saveTraits(model, { sampling: playground.checked })));
  bar.append(
    span.spanControls(model, o.picker, controls),
    by,
    h("label", {}, playground, "sampling"),
    lensToggle(model, controls) ?? "",
    o.exportControls(controls),
  );
  return slider;
}

/** The "lens" box (the logit lens panel), only for a generation that kept the lens (`generate(..., lens_k=k)`). */
function lensToggle(model: Model, controls: Array<() => void>): HTMLElement | null {
  if (!model.get("_payload").lens) return null;
  const box = h("input", { type: "checkbox", "data-testid": "lens-toggle" }) as HTMLInputElement;
  box.checked = Boolean(model.get("lens"));
  controls.push(listen(box, "change", () => saveTraits(model, { lens: box.checked })));
  return h("label", {}, box, "lens");
}

type SamplingTrait = "temperature" | "top_k" | "top_p" | "min_p";

/** Each slider of the playground: its trait, label, range and how its value reads ("off", "all k"). */
function samplingSpecs(
  k: number,
): Array<[SamplingTrait, string, number, number, number, (v: number) => string]> {
  return [
    ["temperature", "temperature", 0.05, 3, 0.05, (v) => v.toFixed(2)],
    ["top_k", "top-k", 0, k, 1, (v) => (v === 0 ? `all ${k}` : String(v))],
    ["top_p", "top-p", 0.05, 1, 0.05, (v) => (v >= 1 ? "off" : v.toFixed(2))],
    ["min_p", "min-p", 0, 1, 0.01, (v) => (v <= 0 ? "off" : v.toFixed(2))],
  ];
}

const candidates = (model: Model) => model.get("_meta").topk_tokens[0]?.length ?? 1;

/** The sampling playground's sliders (temperature, top-k, top-p, min-p) in `box`, shown while `sampling` is on. */
function samplingControls(model: Model, box: HTMLElement, controls: Array<() => void>): void {
  box.replaceChildren();
  box.style.display = model.get("sampling") ? "" : "none";
  if (!model.get("sampling")) return;
  for (const [trait, label, min, max, step, show] of samplingSpecs(candidates(model))) {
    const input = h("input", { type: "range", "data-testid": label }) as HTMLInputElement;
    Object.assign(input, { min: String(min), max: String(max), step: String(step) });
    input.value = String(model.get(trait));
    input.dataset.trait = trait;
    const value = h("span", { className: "aw-muted", text: show(Number(model.get(trait))) });
    controls.push(
      listen(input, "input", () => {
        value.textContent = show(Number(input.value));
        saveTraits(model, { [trait]: Number(input.value) } as Partial<GenerationTraits>);
      }),
    );
    box.append(h("label", { className: "aw-sampling-row" }, h("span", { text: label }), input, value));
  }
}

/** Keep the sliders on the traits when Python (or a link) sets them. */
export function syncSampling(model: Model, box: HTMLElement): void {
  for (const [trait, , , , , show] of samplingSpecs(candidates(model))) {
    const input = box.querySelector<HTMLInputElement>(`input[data-trait="${trait}"]`);
    if (!input) continue;
    const v = Number(model.get(trait));
    if (Number(input.value) !== v) input.value = String(v);
    const text = input.nextElementSibling;
    if (text) text.textContent = show(v);
  }
}

/** The selectable position of the token under an event (null: none there). */
function posAt(e: Event): number | null {
  const pos = (e.target as HTMLElement).closest?.(".aw-tok")?.getAttribute("data-pos");
  return pos === null || pos === undefined ? null : Number(pos);
}

/** Clicks on the text's tokens select (draw/span.ts); a drag over tokens selects the span it covers. */
export function textListeners(model: Model, text: HTMLElement, picker: span.SpanSelector): Array<() => void> {
  let dragFrom: number | null = null; // the token a drag over the text started on
  return [
    listen(text, "mousedown", (e: MouseEvent) => {
      const pos = posAt(e);
      if (pos === null) return;
      e.preventDefault(); // no text selection while dragging over tokens
      picker.click(pos, e);
      dragFrom = e.shiftKey || e.ctrlKey || e.metaKey ? null : pos;
    }),
    listen(text, "mouseover", (e: MouseEvent) => {
      if (dragFrom === null || !(e.buttons & 1)) return;
      const to = posAt(e);
      if (to === null) return;
      const sel = model.get("selection") ?? [];
      const lo = Math.min(dragFrom, to);
      const hi = Math.max(dragFrom, to);
      if (sel.length === hi - lo + 1 && sel[0] === lo) return;
      picker.anchor = dragFrom;
      picker.click(to, { shiftKey: true, ctrlKey: false, metaKey: false });
    }),
    listen(window, "mouseup", () => {
      dragFrom = null;
    }),
  ];
}

/** The step keys on the view (not while typing in a control; the slider steps itself), Escape clears the
 * selection. */
export function stepKeys(
  model: Model,
  root: HTMLElement,
  o: { picker: span.SpanSelector; player: Player; setStep: (step: number) => void; slider: () => unknown },
): () => void {
  return listen(root, "keydown", (e: KeyboardEvent) => {
    if (typedInControl(e) && !(e.target instanceof HTMLInputElement && e.target.type === "range")) return;
    if (e.key === "Escape" && (model.get("selection") ?? []).length) {
      o.picker.clear();
      return;
    }
    if (e.target === o.slider()) return;
    const s = stepKey(e.key, model.get("step"), model.get("_meta").generated.length);
    if (s === null) return;
    e.preventDefault();
    e.stopPropagation();
    o.player.stop();
    o.setStep(s);
  });
}

/** A click on `canvas` goes to the step `stepAt` finds at the click's (x, y) px on it. */
export function clickStep(
  canvas: HTMLCanvasElement,
  stepAt: (x: number, y: number) => number | null,
  go: (step: number) => void,
): () => void {
  return listen(canvas, "click", (e: MouseEvent) => {
    const r = canvas.getBoundingClientRect();
    const s = stepAt(e.clientX - r.left, e.clientY - r.top);
    if (s !== null) go(s);
  });
}
