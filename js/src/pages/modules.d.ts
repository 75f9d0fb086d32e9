// Modules the notebook page imports that have no types of their own.
declare module "aw:views" {
  export const views: Record<string, unknown>;
}
declare module "katex/contrib/auto-render" {
  export default function renderMathInElement(el: HTMLElement, options?: Record<string, unknown>): void;
}
