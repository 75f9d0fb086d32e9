// The host of a saved page (attnwidgets/export.py: save_html). Not a widget: it reads the JSON block the page
// carries, builds a static model with anywidget's model interface (get/set/save_changes/on/off/send) that answers
// the widget's requests from precomputed replies, imports the widget's ES module from a blob: URL and renders it.
// No network: everything it needs is in the page.

import { type PageData, type SavedReply, StaticModel, decodeState } from "./shared/static_model";

function fail(message: string): void {
  const box = document.getElementById("aw-status");
  if (box) box.textContent = message;
}

async function main(): Promise<void> {
  const block = document.getElementById("aw-data");
  const target = document.getElementById("aw-widget");
  if (!block || !target) return fail("this page is missing its data block");
  const data = JSON.parse(block.textContent ?? "{}") as PageData;
  const replies = () => {
    const el = document.getElementById("aw-replies");
    return el ? (JSON.parse(el.textContent ?? "{}") as Record<string, SavedReply>) : {};
  };
  const model = new StaticModel(decodeState(data.state), replies, data.scope);
  const url = URL.createObjectURL(new Blob([data.esm], { type: "text/javascript" }));
  try {
    const mod = await import(/* @vite-ignore */ url);
    const widget = mod.default ?? mod;
    const render = widget.render as (p: { model: StaticModel; el: HTMLElement }) => unknown;
    await render({ model, el: target });
  } finally {
    URL.revokeObjectURL(url);
  }
}

main().catch((e: unknown) => fail(`could not draw this view: ${String((e as Error)?.message ?? e)}`));
