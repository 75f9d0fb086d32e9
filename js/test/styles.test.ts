import { describe, expect, it } from "vitest";
import { BASE_CSS } from "../src/shared/theme";

// Every widget's root carries a copy of these styles (widgetShell), in whatever tree it lives in (marimo's shadow
// root, the document): the copies can only agree and leave the host alone if they style nothing but our classes.
describe("widget styles", () => {
  it("only style our own classes", () => {
    const selectors = BASE_CSS.replace(/\{[^}]*\}/g, "\n")
      .split(/[\n,]/)
      .map((s) => s.trim())
      .filter(Boolean);
    expect(selectors.length).toBeGreaterThan(5);
    for (const s of selectors) expect(s).toMatch(/^\.aw-/);
  });
});
