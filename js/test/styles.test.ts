import { describe, expect, it } from "vitest";
import { BASE_CSS, colormapOf } from "../src/shared/theme";

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

describe("colormapOf", () => {
  const model = (colormap: string, themeName: string) => {
    const traits: Record<string, string> = { colormap, theme: themeName };
    return {
      get: (k: "colormap" | "theme") => traits[k],
      set: () => {},
      save_changes: () => {},
      on: () => {},
      off: () => {},
      send: () => {},
    };
  };

  it("is the widget's colormap trait, or its theme's map when the trait is empty", () => {
    expect(colormapOf(model("", "light"))).toBe("blues");
    expect(colormapOf(model("", "lecture"))).toBe("viridis");
    expect(colormapOf(model("reds", "lecture"))).toBe("reds");
  });
});
