// PNG and SVG of what a widget shows, from the page itself. Any widget can add the buttons with exportButtons().
// PNG: the widget's canvases composited onto one canvas, with its text labels drawn on top.
// SVG: an <svg> with each canvas embedded as an <image> and every text label as a <text> node, all built with DOM
// APIs (createElementNS + textContent) and serialised by XMLSerializer: token text is never spliced into markup.

import { h, listen } from "./dom";

const SVG_NS = "http://www.w3.org/2000/svg";

export interface SnapImage {
  canvas: HTMLCanvasElement;
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface SnapText {
  text: string;
  x: number; // left edge (anchor "start") in CSS pixels
  y: number; // baseline
  size: number;
  weight: string;
  color: string;
  family: string;
}

export interface Snapshot {
  width: number;
  height: number;
  background: string;
  images: SnapImage[];
  texts: SnapText[];
}

/** Text elements that belong in an export: titles, headings, legends (anything marked data-export-text). */
export const TEXT_SELECTOR = ".aw-title, [data-export-text]";

/** What `root` shows now: its canvases and labelled text, in CSS pixels relative to the root's top-left corner. */
export function snapshot(root: HTMLElement): Snapshot {
  const base = root.getBoundingClientRect();
  const style = getComputedStyle(root);
  const images: SnapImage[] = [];
  let width = base.width;
  let height = base.height;
  for (const canvas of Array.from(root.querySelectorAll("canvas"))) {
    const r = canvas.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || canvas.dataset.export === "skip") continue;
    images.push({ canvas, x: r.left - base.left, y: r.top - base.top, w: r.width, h: r.height });
    width = Math.max(width, r.right - base.left);
    height = Math.max(height, r.bottom - base.top);
  }
  const texts: SnapText[] = [];
  for (const el of Array.from(root.querySelectorAll<HTMLElement>(TEXT_SELECTOR))) {
    const text = (el.textContent ?? "").trim();
    const r = el.getBoundingClientRect();
    if (!text || r.width === 0) continue;
    const s = getComputedStyle(el);
    const size = Number.parseFloat(s.fontSize) || 12;
    texts.push({
      text,
      x: r.left - base.left,
      y: r.top - base.top + size * 0.95,
      size,
      weight: s.fontWeight,
      color: s.color,
      family: s.fontFamily,
    });
  }
  const bg = style.backgroundColor;
  return {
    width: Math.ceil(width),
    height: Math.ceil(height),
    background: bg && bg !== "rgba(0, 0, 0, 0)" ? bg : "#ffffff",
    images,
    texts,
  };
}

/** The snapshot as one canvas (at `scale` x CSS pixels). */
export function toCanvas(snap: Snapshot, scale = 2): HTMLCanvasElement {
  const out = document.createElement("canvas");
  out.width = Math.round(snap.width * scale);
  out.height = Math.round(snap.height * scale);
  const ctx = out.getContext("2d");
  if (!ctx) throw new Error("this browser gives no 2D canvas");
  ctx.scale(scale, scale);
  ctx.fillStyle = snap.background;
  ctx.fillRect(0, 0, snap.width, snap.height);
  for (const im of snap.images) ctx.drawImage(im.canvas, im.x, im.y, im.w, im.h);
  for (const t of snap.texts) {
    ctx.font = `${t.weight} ${t.size}px ${t.family}`;
    ctx.fillStyle = t.color;
    ctx.textBaseline = "alphabetic";
    ctx.fillText(t.text, t.x, t.y);
  }
  return out;
}

/** The snapshot as an <svg> element: canvases as <image> (PNG data URLs), labels as <text> nodes. */
export function toSvg(snap: Snapshot): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("xmlns", SVG_NS);
  svg.setAttribute("width", String(snap.width));
  svg.setAttribute("height", String(snap.height));
  svg.setAttribute("viewBox", `0 0 ${snap.width} ${snap.height}`);
  const bg = document.createElementNS(SVG_NS, "rect");
  bg.setAttribute("width", "100%");
  bg.setAttribute("height", "100%");
  bg.setAttribute("fill", snap.background);
  svg.append(bg);
  for (const im of snap.images) {
    const node = document.createElementNS(SVG_NS, "image");
    node.setAttribute("x", String(im.x));
    node.setAttribute("y", String(im.y));
    node.setAttribute("width", String(im.w));
    node.setAttribute("height", String(im.h));
    node.setAttribute("href", im.canvas.toDataURL("image/png"));
    svg.append(node);
  }
  for (const t of snap.texts) {
    const node = document.createElementNS(SVG_NS, "text");
    node.setAttribute("x", String(t.x));
    node.setAttribute("y", String(t.y));
    node.setAttribute("font-size", String(t.size));
    node.setAttribute("font-weight", t.weight);
    node.setAttribute("font-family", t.family);
    node.setAttribute("fill", t.color);
    node.textContent = t.text;
    svg.append(node);
  }
  return svg;
}

export function svgText(svg: SVGSVGElement): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(svg)}`;
}

function download(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: filename });
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function downloadPng(root: HTMLElement, filename: string): void {
  toCanvas(snapshot(root)).toBlob((blob) => {
    if (blob) download(blob, filename);
  }, "image/png");
}

export function downloadSvg(root: HTMLElement, filename: string): void {
  download(new Blob([svgText(toSvg(snapshot(root)))], { type: "image/svg+xml" }), filename);
}

/** "PNG" and "SVG" buttons that download what `root` shows; append the returned span to a toolbar. */
export function exportButtons(
  root: HTMLElement,
  name: () => string,
  cleanups: Array<() => void>,
): HTMLSpanElement {
  const png = h("button", {
    type: "button",
    text: "PNG",
    title: "download this view as PNG",
    "data-testid": "export-png",
  });
  const svg = h("button", {
    type: "button",
    text: "SVG",
    title: "download this view as SVG",
    "data-testid": "export-svg",
  });
  cleanups.push(listen(png, "click", () => downloadPng(root, `${name()}.png`)));
  cleanups.push(listen(svg, "click", () => downloadSvg(root, `${name()}.svg`)));
  return h("span", { className: "aw-export" }, png, svg);
}

/** A file name from free text: letters, digits, dot, dash and underscore only. */
export function safeName(text: string): string {
  return (
    text
      .replace(/[^A-Za-z0-9._-]+/g, "_")
      .replace(/^_+|_+$/g, "")
      .slice(0, 80) || "attention"
  );
}
