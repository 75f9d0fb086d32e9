// The "weights | norms | value zeroing" switch of the heatmap, the model view and the entropy bars (Python:
// widgets/_measure.py). It only writes the synced `measure` trait: Python computes the norm-based maps (Kobayashi
// et al. 2020) or the value-zeroing maps (Mohebbi et al. 2023) and sends them as the widget's usual payload, so
// nothing else in a view changes.

import { h, listen } from "../shared/dom";
import type { WidgetModel } from "../shared/model";

/** The switch's own style: the pressed button filled. */
const MEASURE_CSS = `
.aw-measure { display: inline-flex; }
.aw-measure button { border-radius: 0; }
.aw-measure button:first-child { border-radius: 4px 0 0 4px; }
.aw-measure button:last-child { border-radius: 0 4px 4px 0; border-left: none; }
.aw-measure button.aw-pressed { background: var(--aw-fg); color: var(--aw-bg); }
`;

export interface MeasureTraits {
  measure: string; // "weights" | "norms" | "value_zeroing"
}

/** What a view's `_meta` says about the switch. */
export interface MeasureMeta {
  measure?: string;
  can_norms?: boolean;
}

export const MEASURES: ReadonlyArray<[string, string, string]> = [
  ["weights", "weights", "attention weights α_ij"],
  [
    "norms",
    "norms",
    "‖α_ij f(x_j)‖ as a share of the row: weight times the norm of what is moved (Kobayashi et al. 2020)",
  ],
  [
    "value_zeroing",
    "value zeroing",
    "how far token i's layer output moves when token j's value vectors are zeroed in every head (cosine " +
      "distance, a share of the row; one map per layer, shown in each of its heads; Mohebbi et al. 2023)",
  ],
];

/**
 * Three toggle buttons (test ids `measure-weights`, `measure-norms`, `measure-value_zeroing`; the pressed one has
 * aria-pressed="true") bound to the `measure` trait, or null when the view's source cannot give norms (value zeroing
 * needs the same: a result of aw.run). Listeners go to `controls`.
 */
export function measureToggle<T extends MeasureTraits>(
  model: WidgetModel<T>,
  meta: MeasureMeta,
  controls: Array<() => void>,
): HTMLElement | null {
  if (!meta.can_norms) return null;
  const now = meta.measure ?? model.get("measure") ?? "weights";
  const group = h("span", { className: "aw-measure", role: "group", "aria-label": "measure" });
  group.append(h("style", { text: MEASURE_CSS })); // its own style: the view's CSS stays as it is
  for (const [value, text, title] of MEASURES) {
    const b = h("button", {
      type: "button",
      text,
      title,
      "data-testid": `measure-${value}`,
      "aria-pressed": String(value === now),
    });
    if (value === now) b.classList.add("aw-pressed");
    controls.push(
      listen(b, "click", () => {
        if (model.get("measure") === value) return;
        model.set("measure", value as T["measure"]);
        model.save_changes();
      }),
    );
    group.append(b);
  }
  return h("label", {}, "show", group);
}
