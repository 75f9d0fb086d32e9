// One esbuild build: every js/src/*.ts and every js/src/views/<name>/index.ts is a widget entry, bundled (with
// js/src/shared/ and js/src/draw/) into ../attnwidgets/static/<name>.js as an ES module that anywidget loads. `node build.mjs --watch` rebuilds on change
// (pair it with ANYWIDGET_HMR=1 in the kernel for live reload; see DEVELOP.md).
// It also bundles the JupyterLab extension's entry, js/src/lab/index.ts (which imports the same views), to lib/lab.js
// with JupyterLab's own packages left as imports: `npm run build:lab` (@jupyterlab/builder) makes the federated
// extension in ../attnwidgets/labextension/ from it, sharing those packages with the JupyterLab that loads it.
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import * as esbuild from "esbuild";

const entries = readdirSync("src")
  .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
  .map((f) => ({ in: join("src", f), out: f.slice(0, -3) }));
// A view in parts (js/src/views/<name>/: index.ts wires up state.ts, paint.ts, controls.ts) keeps its file name.
for (const name of existsSync("src/views") ? readdirSync("src/views") : []) {
  const index = join("src", "views", name, "index.ts");
  if (existsSync(index)) entries.push({ in: index, out: name });
}

const options = {
  entryPoints: entries,
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: true,
  sourcemap: false,
  outdir: "../attnwidgets/static",
  logLevel: "info",
};

// The scripts of the page `attnwidgets export` writes (js/src/pages/): page_views (every view's front end and the
// saved-view renderer) and page_math (KaTeX), classic scripts inlined once per page. "aw:views" is made here from the
// same entry list.
const viewsPlugin = {
  name: "aw-views",
  setup(build) {
    build.onResolve({ filter: /^aw:views$/ }, () => ({ path: "aw:views", namespace: "aw" }));
    build.onLoad({ filter: /.*/, namespace: "aw" }, () => {
      const views = entries.filter((e) => e.out !== "page");
      const lines = views.map((e, i) => `import * as v${i} from ${JSON.stringify(resolve(e.in))};`);
      lines.push(
        `export const views = {${views.map((e, i) => `${JSON.stringify(e.out)}: v${i}`).join(", ")}};`,
      );
      return { contents: lines.join("\n"), resolveDir: resolve("src"), loader: "ts" };
    });
  },
};
const pageOptions = {
  ...options,
  entryPoints: [
    { in: join("src", "pages", "views.ts"), out: "page_views" },
    { in: join("src", "pages", "math.ts"), out: "page_math" },
  ],
  format: "iife",
  plugins: [viewsPlugin],
};

// KaTeX's stylesheet with its fonts inlined (woff2 only, as data: URIs; every browser that runs the views reads
// woff2), so the page typesets offline under a CSP that allows fonts from data: only.
function katexCss() {
  const dir = join("node_modules", "katex", "dist");
  const css = readFileSync(join(dir, "katex.min.css"), "utf8").replace(/src:[^;}]*/g, (src) => {
    const woff2 = /url\((fonts\/[^)]+\.woff2)\)/.exec(src);
    if (!woff2) return src;
    const data = readFileSync(join(dir, woff2[1])).toString("base64");
    return `src:url(data:font/woff2;base64,${data}) format("woff2")`;
  });
  writeFileSync(join(options.outdir, "katex.css"), css);
}

const lab = {
  entryPoints: ["src/lab/index.ts"],
  bundle: true,
  format: "esm",
  target: "es2020",
  outfile: "lib/lab.js",
  external: ["@jupyterlab/*", "@lumino/*"],
  logLevel: "info",
};

if (process.argv.includes("--watch")) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await Promise.all([esbuild.build(options), esbuild.build(lab), esbuild.build(pageOptions)]);
  katexCss();
}
