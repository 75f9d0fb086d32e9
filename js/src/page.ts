// The host of a saved page (attnwidgets/export.py: save_html). Not a widget: it reads the JSON block the page
// carries and draws it with the same reader as a saved notebook output (shared/saved_view.ts renderSaved): a static
// model (anywidget's model interface, no kernel) that answers the widget's requests from precomputed replies, and
// the widget's ES module, imported from a blob: URL. No network: everything it needs is in the page.

import { BUNDLES, SAVED_VERSION, renderSaved } from "./shared/saved_view";
import type { PageData, SavedReply } from "./shared/static_model";

function fail(message: string): void {
  const box = document.getElementById("aw-status");
  if (box) box.textContent = message;
}

async function main(): Promise<void> {
  const block = document.getElementById("aw-data");
  const target = document.getElementById("aw-widget");
  if (!block || !target) return fail("this page is missing its data block");
  const data = JSON.parse(block.textContent ?? "{}") as PageData & { version?: number };
  const replies = () => {
    const el = document.getElementById("aw-replies");
    return el ? (JSON.parse(el.textContent ?? "{}") as Record<string, SavedReply>) : {};
  };
  const bundle = BUNDLES[data.widget] ?? "";
  const saved = { ...data, version: data.version ?? SAVED_VERSION, bundle, esm: undefined, replies: {} };
  const url = URL.createObjectURL(new Blob([data.esm], { type: "text/javascript" }));
  try {
    const load = async () => {
      const mod = await import(/* @vite-ignore */ url);
      return mod.default ?? mod;
    };
    await renderSaved(saved, target, { [bundle]: load }, replies);
  } finally {
    URL.revokeObjectURL(url);
  }
}

main().catch((e: unknown) => fail(`could not draw this view: ${String((e as Error)?.message ?? e)}`));
