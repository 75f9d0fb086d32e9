// The wire types of a view, by its name: what its `_payload` and `_meta` traits hold, generated from Python's state
// dataclasses (attnwidgets/viewdata/views/ → js/scripts/wire_types.py → generated/wire.ts). A view declares its
// traits with `WireTraits<"name">`, so reading a field Python no longer sends is a tsc error.

import type { Views } from "../generated/wire";
import type { WidgetModel } from "./model";

export type ViewName = keyof Views;

/** What the view's `_payload` trait holds. */
export type PayloadOf<V extends ViewName> = Views[V]["payload"];

/** What the view's `_meta` trait holds (never: the view has none). */
export type MetaOf<V extends ViewName> = Views[V] extends { meta: infer M } ? M : never;

/** The wire traits of a view, to extend its traits interface with: `_payload`, and `_meta` where it has one. */
export type WireTraits<V extends ViewName> = { _payload: PayloadOf<V> } & (Views[V] extends { meta: infer M }
  ? { _meta: M }
  : unknown);

/** The view's `_payload`, typed by the view's name: `payloadOf<"heatmap">(model)`. */
export function payloadOf<V extends ViewName>(model: WidgetModel<{ _payload: PayloadOf<V> }>): PayloadOf<V> {
  return model.get("_payload");
}

/** The view's `_meta`, typed by the view's name: `metaOf<"heatmap">(model)`. */
export function metaOf<V extends ViewName>(model: WidgetModel<{ _meta: MetaOf<V> }>): MetaOf<V> {
  return model.get("_meta");
}
