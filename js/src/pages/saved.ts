// One saved view drawn with no kernel: the value of a display bundle's `application/vnd.attnwidgets.view+json`
// (attnwidgets/export.py: view_mime) becomes a StaticModel (the same one save_html's page uses) and the view's own
// render() draws it. A value that is not one we can draw (corrupt, from a future version, over the size budget) is
// refused with a line that says why; the caller shows that line and leaves the picture in place.
//
// The `ext` branch's js/src/shared/saved_view.ts (renderSaved) does the same for the JupyterLab extension; when both
// are merged this file should become a re-export of it.

import { type SavedReply, StaticModel, decodeState } from "../shared/static_model";

export const VIEW_MIME = "application/vnd.attnwidgets.view+json";
export const SAVED_VERSION = 1;

export interface SavedView {
  version: number;
  attnwidgets?: string;
  widget: string;
  bundle: string;
  scope?: string;
  state?: Record<string, unknown>;
  replies?: Record<string, SavedReply>;
  omitted?: string;
}

type Render = (p: { model: StaticModel; el: HTMLElement }) => unknown;
export type ViewModules = Record<string, { default?: { render?: Render }; render?: Render }>;

/** Why `data` cannot be drawn, or null when it can. */
export function refusal(data: unknown, modules: ViewModules): string | null {
  if (!data || typeof data !== "object" || Array.isArray(data)) return "the saved view is not an object";
  const d = data as Partial<SavedView>;
  if (d.version !== SAVED_VERSION)
    return `the saved view has format version ${String(d.version)}; this page reads version ${SAVED_VERSION}`;
  if (typeof d.omitted === "string") return d.omitted;
  if (typeof d.bundle !== "string" || !Object.prototype.hasOwnProperty.call(modules, d.bundle))
    return `no front end for a saved view of kind ${JSON.stringify(String(d.bundle))}`;
  if (!d.state || typeof d.state !== "object" || Array.isArray(d.state)) return "the saved view has no state";
  if (
    d.replies !== undefined &&
    (typeof d.replies !== "object" || d.replies === null || Array.isArray(d.replies))
  )
    return "the saved view's replies are not an object";
  return null;
}

/** Draw `data` into `el` with its view's render(); throws Error(refusal) for a value that cannot be drawn. */
export async function renderSaved(data: unknown, el: HTMLElement, modules: ViewModules): Promise<unknown> {
  const why = refusal(data, modules);
  if (why !== null) throw new Error(why);
  const d = data as SavedView;
  const mod = modules[d.bundle];
  const render = (mod.default?.render ?? mod.render) as Render | undefined;
  if (typeof render !== "function") throw new Error(`the ${d.bundle} front end has no render()`);
  const model = new StaticModel(decodeState(d.state), () => d.replies ?? {}, d.scope ?? "all");
  return render({ model, el });
}
