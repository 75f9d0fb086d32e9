// A box's saved state (attnwidgets/widgets/boxes.py: an ipywidgets HBox / VBox holding views, under the same MIME
// type as a view, with "widget": "Box"): drawn as a flex row or column whose views are drawn by the saved-view code
// (saved_view.ts renderSaved), each in its own slot. A box that is malformed, too deep or too big is refused whole
// with a message; a child that cannot be drawn shows its own message in its slot and its siblings still draw. Every
// string from the notebook goes in as textContent or a checked CSS value, never as markup.

/** Draws one child that is a view (saved_view.ts renderSaved, bound to the modules): its cleanup. */
export type DrawView = (data: unknown, el: HTMLElement) => Promise<() => void>;

/** Boxes nested deeper than this are refused (boxes.py MAX_DEPTH). */
export const MAX_BOX_DEPTH = 8;

/** More children than this in one box are refused: a crafted notebook cannot make the page draw without end. */
export const MAX_BOX_CHILDREN = 64;

/** The layout properties a saved box or slot may set (boxes.py STYLE_KEYS), as CSS. */
const STYLE_KEYS: Readonly<Record<string, string>> = {
  flex: "flex",
  flex_flow: "flex-flow",
  align_items: "align-items",
  justify_content: "justify-content",
  width: "width",
  min_width: "min-width",
  max_width: "max-width",
};

/** A CSS value we set: letters, digits, spaces, ".", "%" and "-" only (boxes.py _SAFE_VALUE): never url(...). */
const SAFE_VALUE = /^[A-Za-z0-9 .%-]{1,40}$/;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const IMAGE_FORMATS: Readonly<Record<string, string>> = { png: "png", jpeg: "jpeg", gif: "gif" };

const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === "object" && !Array.isArray(v);

/** Whether saved state `data` is a box's (rather than a view's). */
export function isSavedBox(data: unknown): boolean {
  return isObject(data) && data.widget === "Box";
}

/** Why box `data` cannot be drawn, or "" when it can (its children are checked as they are drawn). */
export function checkBox(data: unknown, version: number): string {
  if (!isObject(data)) return "its saved state is not an object";
  if (typeof data.version !== "number" || !Number.isInteger(data.version) || data.version < 1)
    return "its saved state has no format version";
  if (data.version > version)
    return (
      `it was saved by a newer attnwidgets, in format version ${data.version}; this one reads version ` +
      `${version}. Upgrade attnwidgets (pip install -U attnwidgets) and reload`
    );
  if (data.layout !== "row" && data.layout !== "column") return "its layout is neither 'row' nor 'column'";
  if (!Array.isArray(data.children)) return "its children are not a list";
  if (data.children.length > MAX_BOX_CHILDREN)
    return `it has ${data.children.length} children, more than the ${MAX_BOX_CHILDREN} a saved box may have`;
  return "";
}

/** Set the checked layout properties of `style` on `el`; anything else is ignored. */
export function applyStyle(el: HTMLElement, style: unknown): void {
  if (!isObject(style)) return;
  for (const [key, css] of Object.entries(STYLE_KEYS)) {
    const value = style[key];
    if (typeof value === "string" && SAFE_VALUE.test(value)) el.style.setProperty(css, value);
  }
}

function note(el: HTMLElement, text: string, error: boolean): HTMLElement {
  const box = document.createElement("div");
  box.className = error ? "aw-saved-error" : "aw-saved-needs";
  box.setAttribute("role", error ? "alert" : "note");
  box.style.cssText = error
    ? "color:#b00020;border:1px solid #b00020;border-radius:4px;padding:6px 10px;font:13px system-ui,sans-serif;" +
      "white-space:pre-wrap"
    : "color:#57606a;font:13px system-ui,sans-serif;padding:4px 0";
  box.textContent = text;
  el.append(box);
  return box;
}

/** Draw one child of a box in `slot`: a nested box, a picture, a label, a "needs a kernel" line, or a view. */
async function drawChild(
  child: unknown,
  slot: HTMLElement,
  drawView: DrawView,
  version: number,
  depth: number,
): Promise<() => void> {
  if (isObject(child)) applyStyle(slot, child.slot);
  if (isSavedBox(child)) return renderBox(child, slot, drawView, version, depth + 1);
  if (isObject(child) && child.widget === "Image") {
    const format = IMAGE_FORMATS[String(child.format)];
    if (typeof child.needs === "string") note(slot, `Picture: needs ${child.needs}.`, false);
    else if (!format || typeof child.data !== "string" || !BASE64.test(child.data))
      note(slot, "This saved picture cannot be drawn: its data is not a PNG, JPEG or GIF in base64.", true);
    else {
      const img = document.createElement("img");
      img.src = `data:image/${format};base64,${child.data}`;
      img.alt = "a picture saved with the notebook";
      img.style.cssText = "max-width:100%;height:auto";
      slot.append(img);
    }
    return () => undefined;
  }
  if (isObject(child) && child.widget === "Label" && typeof child.text === "string") {
    note(slot, child.text, false).className = "aw-saved-label";
    return () => undefined;
  }
  if (isObject(child) && typeof child.needs === "string") {
    note(slot, `${String(child.widget).slice(0, 60)}: needs ${child.needs.slice(0, 200)}.`, false);
    return () => undefined;
  }
  return drawView(child, slot); // a view, or anything else: the saved-view check says what is wrong with it
}

/**
 * Draw saved box `data` in `el`: a flex row or column of slots, one per child, each drawn as it comes (views with
 * `drawView`). Returns the cleanup of every child. A box that cannot be drawn leaves only its message in `el`.
 */
export async function renderBox(
  data: unknown,
  el: HTMLElement,
  drawView: DrawView,
  version: number,
  depth = 0,
): Promise<() => void> {
  const why =
    depth >= MAX_BOX_DEPTH ? `its boxes are nested more than ${MAX_BOX_DEPTH} deep` : checkBox(data, version);
  if (why) {
    const box = note(
      el,
      `This saved attnwidgets box cannot be drawn: ${why}. Re-run the cell with a kernel to see it.`,
      true,
    );
    return () => box.remove();
  }
  const box = data as { layout: string; style?: unknown; children: unknown[] };
  const row = document.createElement("div");
  row.className = `aw-saved-box aw-saved-box-${box.layout}`;
  // As an ipywidgets box: no wrapping unless its layout says so; a view never squeezed under its own width (the
  // row scrolls instead).
  row.style.cssText = `display:flex;flex-direction:${box.layout};align-items:flex-start;gap:4px;max-width:100%;overflow-x:auto`;
  applyStyle(row, box.style);
  el.append(row);
  const cleanups: (() => void)[] = [];
  for (const child of box.children) {
    const slot = document.createElement("div");
    slot.className = "aw-saved-box-item";
    row.append(slot);
    try {
      cleanups.push(await drawChild(child, slot, drawView, version, depth));
    } catch (e) {
      note(slot, `This part of the saved box cannot be drawn: ${String((e as Error)?.message ?? e)}`, true);
    }
  }
  return () => {
    for (const c of cleanups) c();
    row.remove();
  };
}
