// The front end's layers: views → draw → shared (the kernel: shell, model, requests, buffers, theme, text, dom) and
// generated (the wire types). An import may only point down: the kernel never reaches into draw/ or a view, draw/
// never into a view, and a view never into another view (what two views share belongs in draw/ or shared/).
/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";

/** What each layer may import (besides itself); a file's layer is its first folder under src/ ("views/<name>" for a
 * view, "page" for src/page.ts and any other entry at the top). */
const ALLOWED: Record<string, string[]> = {
  generated: ["shared"],
  shared: ["generated"],
  draw: ["shared", "generated"],
  view: ["draw", "shared", "generated"],
  page: ["shared", "generated"],
  // The JupyterLab extension (src/lab/): an entry above every view, which it imports to draw saved ones.
  lab: ["view", "shared", "generated"],
  // The scripts of `attnwidgets export`'s page (src/pages/): entries that read saved views with shared/saved_view.ts
  // (the views themselves come in through build.mjs's "aw:views" module, not a relative import).
  pages: ["shared", "generated"],
};

function layerOf(path: string): { layer: string; name: string } {
  const parts = path.split("/");
  if (parts.length === 1) return { layer: "page", name: parts[0] };
  if (parts[0] === "views") return { layer: "view", name: `views/${parts[1]}` };
  return { layer: parts[0], name: parts[0] };
}

/** The relative imports of a source text (static `from "..."`, side-effect `import "..."` and `import("...")`). */
function importsOf(text: string): string[] {
  const specs = [...text.matchAll(/(?:from\s*|import\s*\(?\s*)"(\.[^"]+)"/g)].map((m) => m[1]);
  return [...new Set(specs)];
}

/** Every import that points the wrong way, as "from → to", for files given by their path under src/. */
function layerViolations(files: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [path, text] of Object.entries(files)) {
    const from = layerOf(path);
    for (const spec of importsOf(text)) {
      const target = resolvePath(path.split("/").slice(0, -1).join("/"), spec);
      if (target.startsWith("..")) {
        out.push(`${path} → ${spec} (outside src/)`);
        continue;
      }
      const to = layerOf(target);
      if (to.name === from.name) continue;
      if (!ALLOWED[from.layer]?.includes(to.layer)) out.push(`${path} → ${target}`);
    }
  }
  return out;
}

/** Every source file under js/src, by its path there (Vite reads them at collection time: no Node types needed). */
function sources(): Record<string, string> {
  const raw = import.meta.glob<string>("../src/**/*.ts", { query: "?raw", import: "default", eager: true });
  return Object.fromEntries(Object.entries(raw).map(([path, text]) => [path.slice("../src/".length), text]));
}

/** A path's folders and file, with "." and ".." resolved (POSIX paths, as imports are written). */
function resolvePath(dir: string, spec: string): string {
  const out: string[] = [];
  for (const part of `${dir}/${spec}`.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length && out[out.length - 1] !== "..") out.pop();
      else out.push("..");
    } else out.push(part);
  }
  return out.join("/");
}

describe("front-end layers", () => {
  it("every import in js/src points down: views → draw → shared", () => {
    const files = sources();
    expect(Object.keys(files).some((p) => p.startsWith("draw/"))).toBe(true);
    expect(Object.keys(files).some((p) => p.startsWith("shared/"))).toBe(true);
    expect(layerViolations(files)).toEqual([]);
  });

  it("finds a kernel module that imports a drawing module, a view or another view", () => {
    const files = {
      "shared/theme.ts": 'import type { ColorMapName } from "../draw/colors";',
      "shared/dom.ts": 'import { x } from "../views/heatmap/state";',
      "draw/span.ts": 'import { decode } from "../shared/buffers";\nimport { y } from "../views/qk/paint";',
      "views/qk/paint.ts": 'import { z } from "../heatmap/paint";\nimport { h } from "../../shared/dom";',
      "views/qk/index.ts": 'import { paint } from "./paint";\nimport { lut } from "../../draw/colors";',
      "page.ts": 'const m = import("./draw/canvas");',
    };
    expect(layerViolations(files)).toEqual([
      "shared/theme.ts → draw/colors",
      "shared/dom.ts → views/heatmap/state",
      "draw/span.ts → views/qk/paint",
      "views/qk/paint.ts → views/heatmap/paint",
      "page.ts → draw/canvas",
    ]);
  });
});
