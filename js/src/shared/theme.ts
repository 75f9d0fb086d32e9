// Two looks: "light" for notebooks, "lecture" for a projector (large fonts, high contrast, colour-blind-safe map).

import type { WidgetModel } from "./model";

/** The sequential colour maps a theme (or a widget's `colormap` trait) may name; draw/colors.ts draws them. */
export type ColorMapName = "blues" | "viridis" | "cividis" | "greys" | "reds";

export interface Theme {
  name: string;
  font: number; // px, labels and controls
  fontFamily: string;
  fg: string;
  bg: string;
  muted: string;
  grid: string;
  accent: string;
  colormap: ColorMapName;
  maxGrid: number;
  maxCell: number;
}

export const THEMES: Record<string, Theme> = {
  light: {
    name: "light",
    font: 12,
    fontFamily: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
    fg: "#1f2328",
    bg: "#ffffff",
    muted: "#6e7781",
    grid: "#d0d7de",
    accent: "#d1242f",
    colormap: "blues",
    maxGrid: 560,
    maxCell: 28,
  },
  lecture: {
    name: "lecture",
    font: 20,
    fontFamily: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
    fg: "#000000",
    bg: "#ffffff",
    muted: "#333333",
    grid: "#000000",
    accent: "#d55e00",
    colormap: "viridis",
    maxGrid: 760,
    maxCell: 48,
  },
};

export function theme(name: string | undefined): Theme {
  return THEMES[name ?? "light"] ?? THEMES.light;
}

/** The map a widget with a `colormap` trait draws with: the trait, or ("") its theme's. */
export function colormapOf(model: WidgetModel<{ colormap: string; theme: string }>): ColorMapName {
  return (model.get("colormap") || theme(model.get("theme")).colormap) as ColorMapName;
}

/**
 * The CSS every widget shares. It travels inside each widget's root as a `<style>` (see `widgetShell`), never into
 * the document's head: marimo draws widgets in a shadow root, which styles in the document's head do not reach, and a
 * style that moves with the element also holds before JupyterLab attaches the output, in a view moved to another
 * window, and in a saved page. Controls get their own borders, as hosts such as marimo reset the
 * browser's. Every selector starts with `.aw-`, so the copies (about 1.5 kB each) agree.
 */
export const BASE_CSS = `
.aw-root { font-family: var(--aw-font-family); font-size: var(--aw-font); color: var(--aw-fg); background: var(--aw-bg);
  padding: 6px; position: relative; display: inline-block; outline: none; max-width: 100%; }
.aw-root:focus-visible { box-shadow: 0 0 0 2px var(--aw-accent); }
.aw-bar { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; margin-bottom: 6px; }
.aw-bar label { display: inline-flex; gap: 4px; align-items: center; }
.aw-bar select, .aw-bar button, .aw-bar input { font: inherit; }
.aw-bar select, .aw-bar button { color: var(--aw-fg); background: var(--aw-bg); border: 1px solid var(--aw-muted);
  border-radius: 3px; padding: 1px 6px; }
.aw-bar button { cursor: pointer; }
.aw-root button { user-select: none; -webkit-user-select: none; }
.aw-title { font-weight: 600; overflow-wrap: anywhere; }
.aw-muted { color: var(--aw-muted); }
.aw-tooltip { position: absolute; pointer-events: none; background: rgba(20,20,20,.92); color: #fff; padding: 4px 7px;
  border-radius: 4px; font-size: var(--aw-font); white-space: pre; z-index: 10; display: none; }
.aw-legend { display: flex; align-items: center; gap: 6px; margin-top: 4px; }
.aw-error { color: #b00020; border: 1px solid #b00020; padding: 6px; margin: 4px 0; white-space: pre-wrap; }
.aw-scroll { overflow: auto; max-width: 100%; }
.aw-root.aw-fit { box-sizing: border-box; }
.aw-fit .aw-bar { gap: 2px 8px; margin-bottom: 2px; font-size: calc(var(--aw-font) * 0.8); }
.aw-fit .aw-bar label { gap: 2px; }
.aw-fit .aw-bar select, .aw-fit .aw-bar button { padding: 0 3px; }
.aw-fit .aw-legend { margin-top: 2px; }
.aw-fit .aw-caption { font-size: calc(var(--aw-font) * 0.8); margin: 0 0 4px !important; }
.aw-fit .aw-hint { font-size: calc(var(--aw-font) * 0.75); white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; max-width: 100%; }
`;

export function applyTheme(root: HTMLElement, t: Theme): void {
  root.style.setProperty("--aw-font", `${t.font}px`);
  root.style.setProperty("--aw-font-family", t.fontFamily);
  root.style.setProperty("--aw-fg", t.fg);
  root.style.setProperty("--aw-bg", t.bg);
  root.style.setProperty("--aw-muted", t.muted);
  root.style.setProperty("--aw-accent", t.accent);
  root.dataset.theme = t.name;
}
